/**
 * The in-flight reconcile takes a label up again when its job is gone, but not while an outcome of
 * that job waits in the spool's outcome list: a finished job is removed (removeOnComplete), so it
 * reads as gone, and the outcome will move the file. Taken up again, the label was queued anew
 * and sent twice (traces-failover under load, after a Sentinel failover: the job finished on the
 * new primary, its outcome waited for a busy main thread, and a reconcile pass came in between).
 * Real Redis, real files; anything past the decision (reading the file again) throws.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log.js';
import { documentJobId } from '../../src/queue/enqueue.js';
import { pushOutcome } from '../../src/queue/outcome-list.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import type { ClaimDeps } from '../../src/spool/claim.js';
import { loadInflightIndex } from '../../src/spool/inflight-index.js';
import { inflightName, newClaimId, parseInflightName, spoolPaths } from '../../src/spool/paths.js';
import { reconcileInflight } from '../../src/spool/reconcile.js';
import { createKeys } from '../../src/store/keys.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { makePdf } from '../support/builders.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('reconcile-outcome');
const keys = createKeys(prefix);
const SPOOL_ID = 'spool-under-test';
let redis: RedisConnection;
let queues: QueueSet;
let root: string;

beforeAll(async () => {
  redis = connectRedis(testRedisUrl(), 'reconcile-pending-outcome');
  queues = openQueues(redis, prefix, loadConfig({ env: {} }).delivery);
  root = await mkdtemp(join(tmpdir(), 'cs-reconcile-'));
});
afterAll(async () => {
  await queues?.close();
  await cleanupPrefix(prefix);
  if (redis !== undefined) await closeRedis(redis);
  await rm(root, { recursive: true, force: true });
});

/** A label in flight whose job is not in Redis; returns its job id. */
async function labelInFlight(): Promise<{ jobId: string; deliveryId: string }> {
  const deliveryId = randomUUID();
  const bytes = await makePdf(deliveryId);
  const name = inflightName(newClaimId(bytes), `${deliveryId}.pdf`);
  await mkdir(join(root, '.inflight', 'labels'), { recursive: true });
  await writeFile(join(root, '.inflight', 'labels', name), bytes);
  const parsed = parseInflightName(name)!;
  return { deliveryId, jobId: documentJobId({ kind: 'label', deliveryId, origin: { contentId: parsed.contentId } } as Parameters<typeof documentJobId>[0]) };
}

function deps(): ClaimDeps {
  const takenUpAgain = (): never => {
    throw new Error('taken up again');
  };
  return {
    paths: spoolPaths(root, SPOOL_ID),
    spool: loadConfig({ env: {} }).spool,
    enqueue: { redis, keys, queues } as unknown as ClaimDeps['enqueue'],
    batches: undefined as never,
    sink: { reject: takenUpAgain, archive: takenUpAgain, finishBatch: takenUpAgain },
    track: takenUpAgain,
    untrack: takenUpAgain,
    isOwner: () => true,
    checks: new Proxy({}, { get: takenUpAgain }) as ClaimDeps['checks'],
    clock: systemClock,
    logger: silentLogger,
  };
}

it('leaves a label whose job is gone alone while an outcome of that job waits, and takes it up again once none does', async () => {
  const { jobId, deliveryId } = await labelInFlight();
  expect(await queues.items.label.getJobState(jobId)).toBe('unknown');
  await pushOutcome(redis, keys, SPOOL_ID, {
    kind: 'label',
    jobId,
    deliveryId,
    result: 'accepted',
    origin: { source: 'spool', spoolId: SPOOL_ID, fileName: `${deliveryId}.pdf`, contentId: '' },
    attempts: 1,
    at: new Date().toISOString(),
  } as Parameters<typeof pushOutcome>[3]);

  const index = await loadInflightIndex(spoolPaths(root, SPOOL_ID));
  expect(await reconcileInflight(deps(), index, silentLogger)).toEqual({ resumed: 0, settled: 0 });
  expect(await readdir(join(root, '.inflight', 'labels'))).toHaveLength(1);

  // The outcome applied elsewhere and the list empty, yet the file still here: its job was lost.
  await redis.del(keys.outcomes(SPOOL_ID));
  await expect(reconcileInflight(deps(), index, silentLogger)).rejects.toThrow('taken up again');
});
