/**
 * A `webhook set` (or a reconcile that changed the registration) in the journeys, under
 * `webhook:<webhook id>`: what was sent — the URL without its query, the header NAMES (their values
 * may be credentials and are never kept) and the events — and the API's answer. One write each:
 * this is not the push path.
 */
import { isSyncError } from '../errors.js';
import { appendSteps, prepareJourney, SELF, type StoredStep } from './journey.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';

/** What a PATCH carries (webhook.ts' WebhookRecord). */
interface WebhookRecord {
  url: string;
  headers: Record<string, string> | null;
  events: string[];
}

/** The journey id of a webhook registration (`carrier-sync history webhook:<id>`). */
export function webhookJourneyId(webhookId: string): string {
  return `webhook:${webhookId}`;
}

/** What was sent, without secrets: the URL's origin and path, header names, events. */
export function sentText(record: WebhookRecord): string {
  let url: string;
  try {
    const parsed = new URL(record.url);
    url = `${parsed.origin}${parsed.pathname}${parsed.search === '' ? '' : '?…'}`;
  } catch {
    url = '(not a URL)';
  }
  const headers = record.headers === null ? 'null' : `[${Object.keys(record.headers).join(', ')}]`;
  return `PATCH url=${url} headers=${headers} events=[${record.events.join(', ')}]`;
}

export async function recordWebhookSet(
  ctx: { redis: RedisConnection; keys: Keys },
  ttlSec: number,
  webhookId: string,
  record: WebhookRecord,
  by: 'cli' | 'reconcile',
  error: unknown,
): Promise<void> {
  const answer: Partial<StoredStep> =
    error === null
      ? { st: 200 }
      : isSyncError(error)
        ? {
            c: error.code,
            ...(error.status === undefined ? {} : { st: error.status }),
            ...(error.apiCode === undefined ? {} : { ac: error.apiCode }),
            r: error.apiMessage ?? error.message,
          }
        : { c: 'NETWORK', r: error instanceof Error ? error.message : String(error) };
  prepareJourney(ctx.redis);
  const step: StoredStep = { k: 'w', s: 'webhook-set', x: sentText(record), by, w: SELF, ...answer };
  await appendSteps(ctx.redis.pipeline(), ctx.keys, ttlSec, [{ deliveryId: webhookJourneyId(webhookId), step }], Date.now()).exec();
}
