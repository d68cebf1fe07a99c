/**
 * Counters shared by every process, kept in one Redis hash so that `/metrics` and `status` show
 * the deployment's totals whichever process serves them. Field names: `<counter>:<kind>`.
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisConnection } from './redis.js';
import type { ItemKind } from './keys.js';

export const COUNTERS = ['received', 'sent', 'duplicates', 'failed', 'dead_lettered', 'rate_limited', 'superseded'] as const;
export type Counter = (typeof COUNTERS)[number];

export interface Stats {
  add(counter: Counter, kind: ItemKind, by?: number): Promise<void>;
  read(): Promise<Record<Counter, Record<ItemKind, number>>>;
}

/** Appends a counter's HINCRBY to `chain` (one round trip with the caller's own commands). */
export function addStat(chain: ChainableCommander, statsKey: string, counter: Counter, kind: ItemKind, by = 1): ChainableCommander {
  return chain.hincrby(statsKey, `${counter}:${kind}`, by);
}

export function createStats(redis: RedisConnection, statsKey: string): Stats {
  return {
    async add(counter, kind, by = 1) {
      if (by !== 0) await redis.hincrby(statsKey, `${counter}:${kind}`, by);
    },
    async read() {
      const raw = await redis.hgetall(statsKey);
      const out = {} as Record<Counter, Record<ItemKind, number>>;
      for (const counter of COUNTERS) out[counter] = { label: 0, cte: 0, collecting: 0 };
      for (const [field, value] of Object.entries(raw)) {
        const [counter, kind] = field.split(':') as [Counter, ItemKind];
        const row = out[counter];
        if (row !== undefined && kind in row) row[kind] = Number(value);
      }
      return out;
    },
  };
}
