/**
 * The attempt record (gate/attempt-owner.ts) is one string a SET writes (issue 46: one command
 * where a DEL, an HSET and a PEXPIRE were). A record of the earlier layout, a hash a process of the
 * previous version wrote before an upgrade, is still read: its owner is waited for while alive,
 * given its grace when gone, and its leave still clears it. Against a real Redis, through the push
 * gate's own enter and leave.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAttemptRecord } from '../../src/gate/attempt-owner.js';
import { attemptMember, createPushGate, type PushGate } from '../../src/gate/push-gate.js';
import { createKeys } from '../../src/store/keys.js';
import type { CollectingJob } from '../../src/store/payloads.js';
import { cliEventJob } from '../support/builders.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('attempt');
const keys = createKeys(prefix);
const SELF = 'this-host:1:aaaaaa';
const GRACE_MS = 400;
let redis: Redis;
let gate: PushGate;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  gate = createPushGate(redis, keys, 'carrier-key', {
    ratePerMinute: 100_000,
    maxRequestMs: 5000,
    lockMs: 10_000,
    retentionSec: 3600,
    owner: { self: SELF, graceMs: GRACE_MS },
  });
});
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(prefix);
});

let deliveries = 0;
const event = (): { job: CollectingJob; jobId: string } => cliEventJob(`d-${(deliveries += 1)}`);

/** A record as the previous version wrote it: a hash, with its TTL. */
async function legacyRecord(jobId: string, owner: string, member: string): Promise<void> {
  await redis.hset(keys.attemptOwner(jobId), 'o', owner, 'm', member);
  await redis.pexpire(keys.attemptOwner(jobId), 600_000);
}

it('a go writes the record as one string naming this process and the slot member; its leave removes it', async () => {
  const { job, jobId } = event();
  const go = await gate.enter(job, jobId, 1);
  expect(go.action).toBe('go');
  if (go.action !== 'go') return;
  expect(parseAttemptRecord(await redis.get(keys.attemptOwner(jobId)))).toEqual({ owner: SELF, member: go.slot });
  expect(await redis.pttl(keys.attemptOwner(jobId))).toBeGreaterThan(86_400_000);
  await gate.leave(job, jobId, { slot: go.slot, respondedAt: performance.now() }, 'accepted');
  expect(await redis.exists(keys.attemptOwner(jobId))).toBe(0);
});

it("a record of the earlier layout whose owner is alive: the run waits for that owner's answer", async () => {
  const { job, jobId } = event();
  await redis.set(keys.owner('other-host:2:bbbbbb'), '1', 'PX', 60_000);
  await legacyRecord(jobId, 'other-host:2:bbbbbb', attemptMember(jobId));
  expect(await gate.enter(job, jobId, 2)).toEqual({ action: 'owned', ms: 1000 });
  expect(await redis.type(keys.attemptOwner(jobId))).toBe('hash');
});

it('a record of the earlier layout whose owner is gone: marked, the grace waited out on Redis’ clock, then sent again and counted', async () => {
  const { job, jobId } = event();
  const resentBefore = Number((await redis.hget(keys.answerCounts, 'resent')) ?? 0);
  await legacyRecord(jobId, 'gone-host:3:cccccc', attemptMember(jobId));
  const first = await gate.enter(job, jobId, 2);
  expect(first).toEqual({ action: 'owned', ms: GRACE_MS });
  const marked = parseAttemptRecord(await redis.get(keys.attemptOwner(jobId)));
  expect(marked).toMatchObject({ owner: 'gone-host:3:cccccc', goneAtMs: expect.any(Number) });
  expect(await redis.pttl(keys.attemptOwner(jobId))).toBeGreaterThan(500_000);
  const go = await waitFor(
    async () => {
      const verdict = await gate.enter(job, jobId, 2);
      return verdict.action === 'go' ? verdict : undefined;
    },
    { timeoutMs: 10_000, what: 'the grace over' },
  );
  expect(parseAttemptRecord(await redis.get(keys.attemptOwner(jobId)))).toEqual({ owner: SELF, member: go.slot });
  expect(Number(await redis.hget(keys.answerCounts, 'resent'))).toBe(resentBefore + 1);
});

it('an owner that comes back within its grace: the grace mark goes, and the run waits for it again', async () => {
  const { job, jobId } = event();
  const owner = 'slow-host:4:dddddd';
  const member = attemptMember(jobId);
  await legacyRecord(jobId, owner, member);
  expect((await gate.enter(job, jobId, 2)).action).toBe('owned');
  expect(parseAttemptRecord(await redis.get(keys.attemptOwner(jobId)))?.goneAtMs).toEqual(expect.any(Number));
  await redis.set(keys.owner(owner), '1', 'PX', 60_000);
  expect(await gate.enter(job, jobId, 2)).toEqual({ action: 'owned', ms: 1000 });
  expect(parseAttemptRecord(await redis.get(keys.attemptOwner(jobId)))).toEqual({ owner, member });
});

it("a leave of this process's attempt clears a record of the earlier layout naming it; another attempt's leave writes nothing", async () => {
  const { job, jobId } = event();
  const member = attemptMember(jobId);
  await legacyRecord(jobId, SELF, member);
  await gate.leave(job, jobId, { slot: 'another-member', respondedAt: performance.now() }, 'accepted');
  expect(await redis.type(keys.attemptOwner(jobId))).toBe('hash');
  await gate.leave(job, jobId, { slot: member, respondedAt: performance.now() }, 'accepted');
  expect(await redis.exists(keys.attemptOwner(jobId))).toBe(0);
});
