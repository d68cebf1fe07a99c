/**
 * What every channel offers the sender: one attempt to deliver one message, answering what the
 * other side said (`HTTP 200`, `250 2.0.0 queued`) or throwing an Error whose message says why,
 * without any secret (URLs with tokens, passwords): that message is logged and printed.
 */
import type { Notification } from './message.js';

export const CHANNEL_NAMES = ['webhook', 'slack', 'email'] as const;
export type ChannelName = (typeof CHANNEL_NAMES)[number];

export interface Channel {
  name: ChannelName;
  /** Where it sends, safe to show (no path, query or credentials): `https://hooks.slack.com`. */
  target: string;
  /** One attempt; resolves with the other side's answer, throws when it was not delivered. `signal` cuts it short (shutdown). */
  send(n: Notification, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** Longest part of a refusing answer's body kept in the error message. */
const ANSWER_MAX_CHARS = 200;

/** The origin of a URL (scheme, host, port), the only part of a secret URL that may be shown. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(unparsable URL)';
  }
}

/** POSTs `body` (JSON text); resolves with `HTTP <status>` for a 2xx, else throws with the status and the start of the answer. */
export async function postJson(url: string, body: string, headers: Record<string, string>, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  // Imported at the first notification: the whole of undici is ~4 MB of a daemon that sends none (issue 29).
  const { request } = await import('undici');
  let response;
  try {
    response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: signal === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]),
    });
  } catch (error) {
    // undici's messages name the host and port at most, never the path (where tokens live).
    const code = (error as { code?: string }).code;
    throw new Error(`no answer from ${originOf(url)}: ${code ?? (error as Error).name}${code === undefined ? '' : ` (${(error as Error).message})`}`, {
      cause: error,
    });
  }
  const text = await response.body.text().catch(() => '');
  const answer = text.trim().replace(/\s+/g, ' ').slice(0, ANSWER_MAX_CHARS);
  if (response.statusCode >= 200 && response.statusCode < 300) return `HTTP ${response.statusCode}${answer === '' ? '' : ` ${answer}`}`;
  throw new Error(`HTTP ${response.statusCode} from ${originOf(url)}${answer === '' ? '' : `: ${answer}`}`);
}
