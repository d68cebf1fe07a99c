/**
 * The generic webhook: the message as one JSON object (`webhookBodyOf`), POSTed; with a secret, the
 * header `X-Carrier-Sync-Signature: sha256=<hex HMAC-SHA256 of the raw body>`, so the receiver can
 * check that the body came from us unchanged (compare in constant time, over the raw bytes).
 * The URL and the secret given as files are read again at each send (issue 45: a rotated Secret
 * reaches the next message without a restart).
 */
import { createHmac } from 'node:crypto';
import { currentValueOf, freshValueOf, type Secret } from '../config/secret-file.js';
import { originOf, postJson, type Channel } from './channel.js';
import { webhookBodyOf } from './message.js';

export const SIGNATURE_HEADER = 'x-carrier-sync-signature';

export function signatureOf(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** `secret`: null signs nothing, for the process's life (a secret first given after the start takes a restart). */
export function createWebhookChannel(options: { url: Secret; secret: Secret | null; timeoutMs: number }): Channel {
  return {
    name: 'webhook',
    get target() {
      return originOf(currentValueOf(options.url));
    },
    async send(n, signal) {
      const body = webhookBodyOf(n);
      const headers: Record<string, string> = { 'user-agent': `carrier-sync/${n.version}` };
      if (options.secret !== null) headers[SIGNATURE_HEADER] = signatureOf(body, freshValueOf(options.secret));
      return postJson(freshValueOf(options.url), body, headers, options.timeoutMs, signal);
    },
    async close() {},
  };
}
