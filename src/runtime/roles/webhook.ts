/**
 * Webhook registration. PATCH overwrites the whole record (4.4): headers left out become null, so
 * every PATCH carries the complete desired record. The contract has no way to read a registration,
 * so drift made at the API cannot be seen: the reconcile therefore PATCHes the configured record on
 * every tick (an idempotent overwrite) and reports whether it differs from what was last applied.
 */
import type { ApiClient } from '../../api/index.js';
import { isSyncError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { takeSlot, type RateLimiter } from '../../gate/limiter.js';
import { historyTtlSec } from '../../journey/journey.js';
import type { Context } from '../context.js';
import { recordWebhookSet } from '../../journey/webhook-journey.js';

/** Longest a webhook PATCH waits for a slot of the shared rate limit. */
const SLOT_WAIT_MS = 30_000;

/** The client and its key's shared limiter: a PATCH takes a slot like any request with the key. */
export interface KeyedApi {
  client: ApiClient;
  limiter: RateLimiter;
}

export interface WebhookRecord {
  url: string;
  headers: Record<string, string> | null;
  events: string[];
}

/** `journal`: record the PATCH and its answer in the journey `webhook:<id>` (a set from the CLI, a reconcile that changed it). */
export async function applyWebhook(
  ctx: Pick<Context, 'redis' | 'keys'>,
  api: KeyedApi,
  webhookId: string,
  record: WebhookRecord,
  journal?: { ttlSec: number; by: 'cli' | 'reconcile' },
): Promise<void> {
  const slot = await takeSlot(api.limiter, SLOT_WAIT_MS, `webhook ${webhookId}`);
  let respondedAt: number | undefined;
  try {
    await api.client.patchWebhook(webhookId, record).finally(() => {
      respondedAt = performance.now();
    });
    if (journal !== undefined) await recordWebhookSet(ctx, journal.ttlSec, webhookId, record, journal.by, null);
  } catch (error) {
    if (journal !== undefined) await recordWebhookSet(ctx, journal.ttlSec, webhookId, record, journal.by, error).catch(() => undefined);
    // A 429 holds every process back, as it does for items; the caller tries again later.
    if (isSyncError(error) && error.code === 'API_RATE_LIMITED' && error.retryAfterMs !== undefined) await api.limiter.pause(error.retryAfterMs);
    throw error;
  } finally {
    await api.limiter.stamp(slot, respondedAt);
  }
  await ctx.redis.set(ctx.keys.webhookApplied, JSON.stringify({ id: webhookId, ...record, at: new Date().toISOString() }));
}

export async function reconcileWebhook(ctx: Context, api: KeyedApi, logger: Logger): Promise<{ changed: boolean }> {
  const wanted = ctx.config.webhook;
  if (wanted === null) return { changed: false };
  const desired: WebhookRecord = { url: wanted.url, headers: wanted.headers === null ? null : { ...wanted.headers }, events: [...wanted.events] };
  const raw = await ctx.redis.get(ctx.keys.webhookApplied);
  const applied = raw === null ? null : (JSON.parse(raw) as WebhookRecord & { id: string });
  const changed = applied === null || applied.id !== wanted.id || !sameRecord(applied, desired);
  await applyWebhook(ctx, api, wanted.id, desired, changed ? { ttlSec: historyTtlSec(ctx.config.history.retentionDays), by: 'reconcile' } : undefined);
  logger[changed ? 'info' : 'debug'](
    { webhookId: wanted.id, url: desired.url, headerNames: Object.keys(desired.headers ?? {}), events: desired.events },
    'webhook registration applied',
  );
  return { changed };
}

function sameRecord(a: WebhookRecord, b: WebhookRecord): boolean {
  const canon = (r: WebhookRecord): string =>
    JSON.stringify({ url: r.url, headers: r.headers === null ? null : Object.fromEntries(Object.entries(r.headers).sort()), events: [...r.events].sort() });
  return canon(a) === canon(b);
}
