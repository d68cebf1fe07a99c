/**
 * The message model: one notification, whatever channel carries it. Its fields are the webhook
 * body as INTERFACE.md ("Notifications") fixes it; Slack and e-mail render the same object for a
 * person. A condition sends `firing` once when it starts and `resolved` once when it ends; the
 * dead-letter and refused-file conditions send a `digest` per period instead. The webhook body's
 * schema is `notificationSchema`; docs/notify-webhook.schema.json is its JSON Schema (a test keeps
 * the two equal).
 */
import { z } from 'zod';
import type { Translate } from '../i18n/translate.js';

export const CONDITIONS = [
  'api-key-refused',
  'dead-letters',
  'refused-files',
  'backlog-stuck',
  'redis-unreachable',
  'redis-full',
  'redis-failover',
  'spool-unwatched',
  'spool-disk-low',
  'spool-moves-failing',
  'stalled',
  'test',
] as const;
export type Condition = (typeof CONDITIONS)[number];

export type NotifyState = 'firing' | 'resolved' | 'digest';

export interface Notification {
  condition: Condition;
  state: NotifyState;
  /** One line a person reads. */
  summary: string;
  details: Record<string, unknown>;
  /** ISO time the message was made. */
  at: string;
  host: string;
  version: string;
}

export const notificationSchema = z
  .object({
    condition: z.enum(CONDITIONS).describe('what the message is about; `test` comes from `carrier-sync notify test`'),
    state: z.enum(['firing', 'resolved', 'digest']).describe('firing: the condition began; resolved: it ended; digest: what piled up in a period'),
    summary: z.string().min(1).describe('one line a person reads'),
    details: z.record(z.string(), z.unknown()).describe('facts per condition; a firing/resolved pair shares `episode` and `since`'),
    at: z.iso.datetime().describe('when the message was made (ISO 8601, UTC)'),
    host: z.string().min(1).describe('host name of the process that sent it'),
    version: z.string().min(1).describe('carrier-sync version of that process'),
  })
  .strict()
  .describe('The body of a carrier-sync notification webhook (POST, application/json)');

/** Where a message comes from: added to every message a process makes. */
export interface Origin {
  host: string;
  version: string;
}

export function makeNotification(
  origin: Origin,
  condition: Condition,
  state: NotifyState,
  summary: string,
  details: Record<string, unknown>,
  atMs: number,
): Notification {
  return { condition, state, summary, details, at: new Date(atMs).toISOString(), host: origin.host, version: origin.version };
}

/** The webhook body: exactly the model's fields, in a fixed order. */
export function webhookBodyOf(n: Notification): string {
  return JSON.stringify({ condition: n.condition, state: n.state, summary: n.summary, details: n.details, at: n.at, host: n.host, version: n.version });
}

const STATE_WORD = { firing: 'notify.state.firing', resolved: 'notify.state.resolved', digest: 'notify.state.digest' } as const;

/** A short title: `[FIRING] api-key-refused: <summary>` (`[ALERTA] …` in pt-BR); the e-mail subject and the Slack fallback text. */
export function titleOf(n: Notification, t: Translate): string {
  return t('notify.title', { state: t(STATE_WORD[n.state]), condition: n.condition, summary: n.summary });
}

/**
 * The details as `key: value` lines, each key named in the reader's language (the webhook's JSON
 * keeps the keys); a list of groups (a digest's) as one indented line each.
 */
export function detailLines(details: Record<string, unknown>, t?: Translate): string[] {
  return Object.entries(details).flatMap(([key, value]) => {
    const name = t === undefined ? key : t('notify.detailKey', { key });
    if (Array.isArray(value) && value.every((item) => item !== null && typeof item === 'object' && !Array.isArray(item))) {
      return [`${name}:`, ...value.map((item) => `  - ${groupLine(item as Record<string, unknown>)}`)];
    }
    return [`${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`];
  });
}

/** `label DELIVERY_NOT_FOUND × 50: id1, id2, …` for a digest group; other objects as `k=v` pairs. */
function groupLine(group: Record<string, unknown>): string {
  const { kind, code, count, sample, ...rest } = group;
  if (typeof kind === 'string' && typeof code === 'string' && typeof count === 'number') {
    const ids = Array.isArray(sample) ? sample.map(String) : [];
    const more = count > ids.length ? ', …' : '';
    return `${kind} ${code} × ${count}${ids.length > 0 ? `: ${ids.join(', ')}${more}` : ''}`;
  }
  return Object.entries({ kind, code, count, sample, ...rest })
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
}

/** The whole message as plain text (the e-mail body). */
export function plainTextOf(n: Notification, t: Translate): string {
  return [titleOf(n, t), '', ...detailLines(n.details, t), '', footerOf(n, t), ''].join('\n');
}

/** `at <time> · host <host> · carrier-sync <version>`. */
export function footerOf(n: Notification, t: Translate): string {
  return t('notify.footer', { at: n.at, host: n.host, version: n.version });
}
