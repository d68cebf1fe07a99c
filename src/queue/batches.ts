/**
 * An events file in flight is a batch: the set of job ids its valid records became, and the set
 * of those that have finished. The file may leave the in-flight folder once every job finished.
 * Both sets are idempotent, so reprocessing a file after a crash, or an outcome delivered twice,
 * changes nothing.
 */
import type { InvalidLine } from './failure-report.js';
import { defineScript } from '../store/script.js';
import { BATCH_MARK_DONE_LUA, COMPLETE_LUA } from '../gate/batch-lines.js';
import type { RedisConnection } from '../store/redis.js';
import type { Keys } from '../store/keys.js';
import type { DeadLetterFacts } from './failure-report.js';

export interface BatchInfo {
  batchId: string;
  /** The file's name in the in-flight folder. */
  inflightName: string;
  fileName: string;
  /** Invalid lines and duplicates, reported in `.error.json` / the log when the batch closes. */
  rejects: InvalidLine[];
  duplicates: number;
  /**
   * The file's size when it was read: its records are those bytes'. A file found another size when
   * its batch ends was written to after the read (a writer that appends), and what it wrote since was
   * not sent (outcome/apply.ts). Absent in a batch sealed by a version before it.
   */
  fileBytes?: number;
}

export interface BatchState {
  info: BatchInfo;
  /** Every job of the file is queued and recorded (`seal`); until then more may come. */
  isSealed: boolean;
  total: number;
  /** The dead-lettered events of the file, with what their `.error.json` entry needs. */
  deadLettered: Array<{ line: number } & DeadLetterFacts>;
}

// KEYS: 1 jobs set, 2 done set, 3 batch hash. ARGV: 1 job id, 2 dead-letter JSON or ''.
// Returns 1 when the batch is sealed and every job has finished, else 0.
const MARK_DONE = defineScript(
  'batchMarkDone',
  `${BATCH_MARK_DONE_LUA}
local jobsKey, doneKey, batchKey = KEYS[1], KEYS[2], KEYS[3]
local jobId, deadLetter = ARGV[1], ARGV[2]
return batchMarkDone(jobsKey, doneKey, batchKey, jobId, deadLetter) and 1 or 0
`,
);

/** A dead-lettered job's entry in its batch, as `batchMarkDone` keeps it (`read` gives it back). */
export function batchDeadLetterJson(jobId: string, deadLetter: { line: number } & DeadLetterFacts): string {
  return JSON.stringify({ ...deadLetter, jobId });
}

// KEYS: 1 jobs set, 2 done set. Returns 1 when every job of the batch has finished, else 0.
const IS_COMPLETE = defineScript(
  'batchIsComplete',
  `${COMPLETE_LUA}
return isComplete(KEYS[1], KEYS[2]) and 1 or 0
`,
);

export interface Batches {
  /**
   * Records the batch's jobs and seals it; true when every job has already finished. `doneIds`:
   * jobs of it known finished without their outcome having marked them (events this file's earlier
   * claim sent: their claims say so), marked done in the same round trip.
   */
  seal(info: BatchInfo, jobIds: readonly string[], doneIds?: readonly string[]): Promise<boolean>;
  /** True when every job of the batch has finished (every one: a done set larger than the jobs set is not enough). */
  isComplete(batchId: string): Promise<boolean>;
  markDone(batchId: string, jobId: string, deadLetter?: { line: number } & DeadLetterFacts): Promise<boolean>;
  read(batchId: string): Promise<BatchState | null>;
  /** How many of the batch's jobs are marked done (its progress). */
  doneCount(batchId: string): Promise<number>;
  /** The batch's jobs not marked done. */
  unfinished(batchId: string): Promise<string[]>;
  /** True once the batch was sealed (the watchdog's check for a file whose batch never was). */
  isSealed(batchId: string): Promise<boolean>;
  drop(batchId: string): Promise<void>;
}

export function createBatches(redis: RedisConnection, keys: Keys): Batches {
  const isComplete = async (batchId: string): Promise<boolean> =>
    Number(await IS_COMPLETE(redis, [keys.batchJobs(batchId), keys.batchDone(batchId)], [])) === 1;
  return {
    isComplete,
    async seal(info, jobIds, doneIds = []) {
      const pipeline = redis.pipeline();
      for (let i = 0; i < jobIds.length; i += 1000) pipeline.sadd(keys.batchJobs(info.batchId), ...jobIds.slice(i, i + 1000));
      for (let i = 0; i < doneIds.length; i += 1000) pipeline.sadd(keys.batchDone(info.batchId), ...doneIds.slice(i, i + 1000));
      pipeline.hset(keys.batch(info.batchId), 'info', JSON.stringify(info), 'sealed', '1');
      await pipeline.exec();
      return isComplete(info.batchId);
    },
    async markDone(batchId, jobId, deadLetter) {
      const payload = deadLetter === undefined ? '' : batchDeadLetterJson(jobId, deadLetter);
      const result = await MARK_DONE(redis, [keys.batchJobs(batchId), keys.batchDone(batchId), keys.batch(batchId)], [jobId, payload]);
      return Number(result) === 1;
    },
    async read(batchId) {
      const hash = await redis.hgetall(keys.batch(batchId));
      if (hash['info'] === undefined) return null;
      const total = await redis.scard(keys.batchJobs(batchId));
      const deadLettered = Object.entries(hash)
        .filter(([field]) => field.startsWith('dead:'))
        .map(([, value]) => deadLetterOf(JSON.parse(value) as Partial<BatchState['deadLettered'][number]> & { jobId: string; line: number }));
      return { info: JSON.parse(hash['info']) as BatchInfo, isSealed: hash['sealed'] === '1', total, deadLettered };
    },
    doneCount: (batchId) => redis.scard(keys.batchDone(batchId)),
    unfinished: (batchId) => redis.sdiff(keys.batchJobs(batchId), keys.batchDone(batchId)),
    isSealed: async (batchId) => (await redis.hget(keys.batch(batchId), 'sealed')) === '1',
    async drop(batchId) {
      await redis.unlink(keys.batch(batchId), keys.batchJobs(batchId), keys.batchDone(batchId));
    },
  };
}

/** Entries stored before the facts were kept (only `jobId`, `line`, `error`) read with nulls. */
function deadLetterOf(stored: Partial<BatchState['deadLettered'][number]> & { jobId: string; line: number }): BatchState['deadLettered'][number] {
  return {
    line: stored.line,
    jobId: stored.jobId,
    error: stored.error ?? {},
    attempts: stored.attempts ?? null,
    firstFailureAt: stored.firstFailureAt ?? null,
    lastFailureAt: stored.lastFailureAt ?? null,
    deliveryId: stored.deliveryId ?? null,
  };
}
