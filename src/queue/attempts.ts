/**
 * The error of every attempt of a job, kept beside it so a dead letter shows its whole history
 * (BullMQ keeps only stack traces). Entries hold our SyncError's JSON, which never carries
 * request headers, so no key can reach a DLQ listing through here.
 */
import type { CappedAppend } from '../gate/push-gate.js';
import type { RedisConnection } from '../store/redis.js';
import type { Keys } from '../store/keys.js';

export interface AttemptRecord {
  attempt: number;
  at: string;
  code: string;
  message: string;
  status?: number;
  apiCode?: string;
  apiMessage?: string;
  params?: Record<string, unknown>;
}

const KEEP = 50;
const TTL_SECONDS = 90 * 86_400;

export interface AttemptLog {
  record(jobId: string, entry: AttemptRecord): Promise<void>;
  /** The same record as a write for the gate's `leave`, which appends it with the answer (one round trip, one write). */
  append(jobId: string, entry: AttemptRecord): CappedAppend;
  read(jobId: string): Promise<AttemptRecord[]>;
  forget(jobId: string): Promise<void>;
}

export function createAttemptLog(redis: RedisConnection, keys: Keys): AttemptLog {
  return {
    async record(jobId, entry) {
      const key = keys.attempts(jobId);
      await redis.multi().rpush(key, JSON.stringify(entry)).ltrim(key, -KEEP, -1).expire(key, TTL_SECONDS).exec();
    },
    append(jobId, entry) {
      return { list: keys.attempts(jobId), entry: JSON.stringify(entry), keep: KEEP, ttlSec: TTL_SECONDS };
    },
    async read(jobId) {
      const raw = await redis.lrange(keys.attempts(jobId), 0, -1);
      return raw.map((line) => JSON.parse(line) as AttemptRecord);
    },
    async forget(jobId) {
      await redis.unlink(keys.attempts(jobId));
    },
  };
}
