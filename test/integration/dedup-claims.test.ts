/**
 * The event_at claims (gate/event-claims.ts) on a real Redis: new / own / duplicate, a sent event's claim
 * (marked done by the push gate's leave) stops its own source too (as sent), a purged dead letter's claim is
 * released, the lookup reads every bucket within the retention and no older one, and the event's
 * bytes count only at a record's start. And the upgrade: claims of the earlier layout
 * (`dedup:<delivery>` hashes) still stop a duplicate, and still count as the source's own.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_BUCKET_SEC, claimRecord, createDedupMemory } from '../../src/gate/event-claims.js';
import { createKeys } from '../../src/store/keys.js';
import type { CollectingJob } from '../../src/store/payloads.js';
import { createPushGate, type PushGate } from '../../src/gate/push-gate.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('claims');
const keys = createKeys(prefix);
const RETENTION_DAYS = 90;
let redis: Redis;
let gate: PushGate;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  gate = createPushGate(redis, keys, 'carrier-key', { ratePerMinute: 1000, maxRequestMs: 5000, lockMs: 10_000, retentionSec: 3600 });
});
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(prefix);
});

const dedup = () => createDedupMemory(redis, keys, RETENTION_DAYS);
const instant = (n: number): string => `2026-03-01T12:00:${String(n).padStart(2, '0')}Z`;
function jobOf(deliveryId: string, instantKey: string, sourceId: string): CollectingJob {
  return {
    kind: 'collecting',
    deliveryId,
    eventAt: instantKey,
    wire: instantKey,
    instantKey,
    epochMs: Date.parse(instantKey),
    sourceId,
    origin: { source: 'cli' },
    receivedAt: new Date().toISOString(),
  };
}
/** The push gate's leave for a sent (or dead-lettered) event, as the processor calls it. */
const leave = (job: CollectingJob, result: 'accepted' | 'dead-lettered'): Promise<string | null> =>
  gate.leave(job, `collecting.${job.instantKey}`, null, result);
const currentBucket = async (): Promise<number> => Math.floor(Number((await redis.time())[0]) / CLAIM_BUCKET_SEC);

describe('the event_at claims', () => {
  it('new, own, duplicate; once sent, the same source is a duplicate too; a replayed run is already done', async () => {
    const d = randomUUID();
    expect(await dedup().claim(d, instant(1), 'file:a:1')).toBe('new');
    expect(await dedup().claim(d, instant(1), 'file:a:1')).toBe('own');
    expect(await dedup().claim(d, instant(1), 'file:b:7')).toBe('duplicate');
    expect(await dedup().claim(d, instant(2), 'file:b:7')).toBe('new');
    expect(await dedup().claim(randomUUID(), instant(1), 'file:b:7')).toBe('new');

    const job = jobOf(d, instant(1), 'file:a:1');
    expect(await leave(jobOf(d, instant(1), 'file:b:7'), 'accepted')).toBeNull(); // not its claim: nothing marked
    expect(await dedup().claim(d, instant(1), 'file:a:1')).toBe('own');
    await leave(job, 'accepted');
    // Its own source again (a file re-read after a crash): sent already, never queued again.
    expect(await dedup().claim(d, instant(1), 'file:a:1')).toBe('sent');
    expect(await dedup().claim(d, instant(1), 'file:c:1')).toBe('duplicate');
    // A run of the job that is not in its chain (another run finished it): already done.
    expect(await gate.enter(job, `collecting.${job.instantKey}`)).toEqual({ action: 'already-accepted' });
    // Released only while its source holds it undone: a sent event stays claimed.
    await dedup().release(d, instant(1), 'file:a:1');
    expect(await dedup().claim(d, instant(1), 'file:c:1')).toBe('duplicate');
  });

  it('a dead-lettered event keeps its claim until the dead letter is purged; then the instant is free', async () => {
    const d = randomUUID();
    for (let n = 0; n < 5; n += 1) expect(await dedup().claim(d, instant(n), `http:r:${n}`)).toBe('new');
    await leave(jobOf(d, instant(2), 'http:r:2'), 'dead-lettered');
    expect(await dedup().claim(d, instant(2), 'http:r:2')).toBe('own');
    await dedup().release(d, instant(2), 'http:other:2'); // not its holder: kept
    expect(await dedup().claim(d, instant(2), 'http:s:2')).toBe('duplicate');
    await dedup().release(d, instant(2), 'http:r:2');
    expect(await dedup().claim(d, instant(2), 'http:s:2')).toBe('new');
    // The records around the released one are intact.
    for (const n of [0, 1, 3, 4]) expect(await dedup().claim(d, instant(n), `http:r:${n}`)).toBe('own');
  });

  it('reads every bucket within the retention and none older; the event counts only at a record start', async () => {
    const d = randomUUID();
    const stem = keys.eventClaims(d);
    const current = await currentBucket();
    const oldest = current - Math.ceil((RETENTION_DAYS * 86_400) / CLAIM_BUCKET_SEC);
    await redis.append(`${stem}${oldest}`, claimRecord(d, instant(1), 'file:old:1'));
    await redis.append(`${stem}${oldest - 1}`, claimRecord(d, instant(2), 'file:old:2'));
    expect(await dedup().claim(d, instant(1), 'file:new:1')).toBe('duplicate');
    expect(await dedup().claim(d, instant(1), 'file:old:1')).toBe('own');
    expect(await dedup().claim(d, instant(2), 'file:new:2')).toBe('new');
    // Found in a bucket between (read with the older ones in one MGET): its bucket and offset are
    // the ones a release deletes from.
    await redis.append(`${stem}${current - 3}`, Buffer.concat([claimRecord(d, instant(4), 'file:a:4'), claimRecord(d, instant(5), 'file:mid:5')]));
    expect(await dedup().claim(d, instant(5), 'file:new:5')).toBe('duplicate');
    await dedup().release(d, instant(5), 'file:mid:5');
    expect(await redis.getBuffer(`${stem}${current - 3}`)).toEqual(claimRecord(d, instant(4), 'file:a:4'));
    expect(await dedup().claim(d, instant(5), 'file:new:5')).toBe('new');
    // The event's 8 bytes inside another record (offset 4) are no claim of it.
    const event = claimRecord(d, instant(3), 'x').subarray(0, 8);
    await redis.append(`${stem}${current}`, Buffer.concat([Buffer.from('abcd'), event]));
    expect(await dedup().claim(d, instant(3), 'file:new:3')).toBe('new');
    expect(await dedup().claim(d, instant(3), 'file:other:3')).toBe('duplicate');
    // A bucket expires a retention after it ends.
    expect(await redis.call('EXPIRETIME', `${stem}${current}`)).toBe((current + 1) * CLAIM_BUCKET_SEC + RETENTION_DAYS * 86_400);
  });
});

describe('claims written before the upgrade (one dedup:<delivery> hash each)', () => {
  it('still stop a duplicate, still count as their source own, and are marked done when their event is sent', async () => {
    const d = randomUUID();
    const legacy = keys.dedup(d);
    // What the earlier version left: one event sent, one claimed (its job not yet added or in flight).
    await redis.hset(legacy, instant(1), 'done:file:old:1', instant(2), 'file:old:2');
    await redis.expire(legacy, RETENTION_DAYS * 86_400);

    expect(await dedup().claim(d, instant(1), 'file:old:1')).toBe('sent');
    expect(await dedup().claim(d, instant(1), 'http:new:1')).toBe('duplicate');
    expect(await dedup().claim(d, instant(2), 'http:new:2')).toBe('duplicate');
    expect(await dedup().claim(d, instant(2), 'file:old:2')).toBe('own');
    expect(await gate.enter(jobOf(d, instant(1), 'file:old:1'), `collecting.${instant(1)}`)).toEqual({ action: 'already-accepted' });

    // The pre-upgrade claim's event is sent by this version: marked done where it is.
    await leave(jobOf(d, instant(2), 'file:old:2'), 'accepted');
    expect(await redis.hget(legacy, instant(2))).toBe('done:file:old:2');
    expect(await dedup().claim(d, instant(2), 'file:old:2')).toBe('sent');

    // A purged dead letter of the earlier layout is released there.
    await redis.hset(legacy, instant(3), 'file:old:3');
    await dedup().release(d, instant(3), 'file:old:3');
    expect(await redis.hexists(legacy, instant(3))).toBe(0);
    expect(await dedup().claim(d, instant(3), 'http:new:3')).toBe('new');
    // New claims go to the compact records, never to the earlier hash.
    expect(await redis.hlen(legacy)).toBe(2);
  });
});
