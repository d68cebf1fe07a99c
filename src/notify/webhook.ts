/**
 * The generic webhook: the message as one JSON object (`webhookBodyOf`), POSTed; with a secret, the
 * header `X-Carrier-Sync-Signature: sha256=<hex HMAC-SHA256 of the raw body>`, so the receiver can
 * check that the body came from us unchanged (compare in constant time, over the raw bytes).
 */
import { createHmac } from 'node:crypto';
import { originOf, postJson, type Channel } from './channel.js';
import { webhookBodyOf } from './message.js';

export const SIGNATURE_HEADER = 'x-carrier-sync-signature';

export function signatureOf(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

export function createWebhookChannel(options: { url: string; secret: string | null; timeoutMs: number }): Channel {
  return {
    name: 'webhook',
    target: originOf(options.url),
    async send(n, signal) {
      const body = webhookBodyOf(n);
      const headers: Record<string, string> = { 'user-agent': `carrier-sync/${n.version}` };
      if (options.secret !== null) headers[SIGNATURE_HEADER] = signatureOf(body, options.secret);
      return postJson(options.url, body, headers, options.timeoutMs, signal);
    },
    async close() {},
  };
}
