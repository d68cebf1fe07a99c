/**
 * Upgrading across the event_at claims' change of layout (issue 23), end to end: claims an earlier
 * version left (`dedup:<delivery>` hashes: instant → source id, `done:<source>` once sent) are
 * written as it wrote them, the daemon of this version starts on them, and the same events come in
 * again — over POST /events (another source) and by the enqueue path a file re-read after a crash
 * takes (the same source). No event is sent a second time; the same source's pending claim is its
 * own (queued and sent once), and a duplicate after that. The sandbox's request log is the judge.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { enqueueEvents } from '../../src/queue/enqueue.js';
import { createKeys } from '../../src/store/keys.js';
import { collectingJobOf } from '../../src/store/payloads.js';
import { openContext } from '../../src/runtime/context.js';
import { checkEventRecord } from '../../src/validate/event-record.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const collectingOf = (t: TestDaemon, deliveryId: string) =>
  t.sandbox.requests().filter((r) => r.endpoint === 'collecting' && r.deliveryId === deliveryId && r.status === 200);

/** Events the daemon recorded as sent (the deployment's counter). */
async function sentEvents(t: TestDaemon): Promise<number> {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  try {
    return Number((await redis.hget(createKeys(t.prefix).stats, 'sent:collecting')) ?? 0);
  } finally {
    redis.disconnect();
  }
}

/** The enqueue path with a given source id (what a file's in-flight copy re-read after a crash takes). */
async function ingestAs(t: TestDaemon, sourceId: string, deliveryId: string, eventAt: string): Promise<'queued' | 'duplicate'> {
  const verdict = checkEventRecord({ delivery_id: deliveryId, event_at: eventAt });
  if (!verdict.ok) throw verdict.error;
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-upgrade');
  try {
    const result = await enqueueEvents(ctx.enqueueDeps, [collectingJobOf(verdict.value, sourceId, { source: 'cli' }, new Date().toISOString())]);
    return result.duplicates.length > 0 ? 'duplicate' : 'queued';
  } finally {
    await ctx.closers.closeAll();
  }
}

it('claims written before the upgrade still stop a duplicate, and still count as their own source', async () => {
  running = await startTestDaemon({ roles: ['worker', 'http'], sandbox: { autoCreateDeliveries: true } });
  const t = running;
  const d = randomUUID();
  const sent = '2026-04-01T10:00:00Z'; // sent by the earlier version
  const pending = '2026-04-01T11:00:00Z'; // claimed by it, its job never added (a crash in between)
  const fresh = '2026-04-01T12:00:00Z';
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-upgrade-old');
  try {
    const legacy = createKeys(t.prefix).dedup(d);
    await ctx.redis.hset(legacy, sent, 'done:file:old-claim:1', pending, 'file:old-claim:2');
    await ctx.redis.expire(legacy, 90 * 86_400);
  } finally {
    await ctx.closers.closeAll();
  }
  await t.restart();

  // The same instants from another source (other offsets too): duplicates; only the fresh one goes.
  const response = await fetch(`${t.daemon.opsUrl()!}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { delivery_id: d, event_at: '2026-04-01T07:00:00-03:00' },
      { delivery_id: d, event_at: pending },
      { delivery_id: d, event_at: fresh },
    ]),
  });
  expect(response.status).toBe(202);
  expect(((await response.json()) as { results: Array<{ status: string }> }).results.map((r) => r.status)).toEqual(['duplicate', 'duplicate', 'queued']);
  await waitFor(() => collectingOf(t, d).length === 1, { what: 'the fresh event sent' });

  // The sources of the earlier claims, taken in again: the sent one is a duplicate, the pending one
  // is its own (queued, sent once), and a duplicate once sent.
  expect(await ingestAs(t, 'file:old-claim:1', d, sent)).toBe('duplicate');
  expect(await ingestAs(t, 'file:old-claim:2', d, pending)).toBe('queued');
  // Sent, and its answer written (the claim is marked done in the same script as the sent counter).
  await waitFor(async () => collectingOf(t, d).length === 2 && (await sentEvents(t)) === 2, { what: 'the pending event sent and its answer written' });
  expect(await ingestAs(t, 'file:old-claim:2', d, pending)).toBe('duplicate');
  expect(await ingestAs(t, `http:${randomUUID()}:0`, d, fresh)).toBe('duplicate');

  // A duplicate is never queued, so nothing more can go out: two requests, one per instant.
  expect(
    collectingOf(t, d)
      .map((r) => r.eventAt)
      .sort(),
  ).toEqual([pending.replace('Z', '.000Z'), fresh.replace('Z', '.000Z')]);
  expect(collectingOf(t, d).filter((r) => r.isRepeat === true)).toEqual([]);
});
