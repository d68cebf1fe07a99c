/**
 * item-bytes (issue 46 item 6): what a settled item leaves in Redis. A daemon (watcher + worker,
 * the defaults, limits lifted) on a private redis-server sends a warm-up of 400 labels (so queues,
 * streams, shards and scripts exist), then 1,000 labels of known deliveries. Each batch is settled
 * (every file archived, then BullMQ's completed jobs removed: `removeOnComplete`, and the outcome
 * list empty) and the API limiter's window (a slot per request of the last 60 s, bounded by the
 * limit) deleted before Redis is read, so what is left is what the items keep for the history window. Reported: `used_memory` bytes an item (after −
 * before, over the 1,000), the same at settling with the limiter window still full, and a
 * key-by-key breakdown (MEMORY USAGE by key pattern, support/redis.ts `memoryByPattern`) of what
 * grew, each pattern with the TTL of one of its keys (how long it stays).
 * Then the journeys are folded as the hourly `journeyCompact` job would fold them once the day is
 * past the detail window (journey/journey-compact.ts, with a clock `history.detailDays` + 1 day
 * later; the warm-up is folded the same way before the first reading), and read again: bytes an
 * item kept for the rest of the history window.
 * Target (issue 46): ≤ 400 bytes an item once settled, for the whole history window.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startSandbox } from '../../../src/sandbox/server.js';
import { spawnDaemon } from '../support/daemon.js';
import { dropAll, labelPdf, stageFiles } from '../support/inputs.js';
import { benchPrefix, memoryByPattern, memoryOverheads, startPrivateRedis, usedMemory, type KeyGroup } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { listFiles } from '../support/tally.js';
import { round, sleep, waitFor } from '../support/wait.js';
import { setAside } from '../support/work-folder.js';
import { compactJourneys, type CompactResult } from '../../../src/journey/journey-compact.js';
import { deadLetterDeliveries } from '../../../src/queue/dead-letter.js';
import { DAY_MS, epochDayOf } from '../../../src/journey/journey.js';
import { openQueues } from '../../../src/queue/queues.js';
import { createKeys } from '../../../src/store/keys.js';

const UNLIMITED = 1_000_000_000;
export const ITEM_BYTES_TARGET = 400;
const WARM_UP = 400;
const MEASURED = 1000;
/** The defaults (config/default.yaml history.*). */
const RETENTION_DAYS = 30;
const DETAIL_DAYS = 1;

interface Reading {
  used: number;
  groups: KeyGroup[];
  clientBytes: number;
  scriptBytes: number;
}

export const itemBytesScenario: Scenario = {
  name: 'item-bytes',
  isComparable: true,
  async run(env) {
    const own = await startPrivateRedis(1024);
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED });
    const carrier = [...sandbox.state.carriers.keys()][0] ?? '';
    const spool = join(env.workDir, 'item-bytes-spool');
    const staging = join(env.workDir, 'item-bytes-staging');
    const prefix = benchPrefix('bytes');
    const redis = new Redis(own.url, { maxRetriesPerRequest: null });
    const keys = createKeys(prefix);
    const queues = openQueues(redis, prefix, { maxAttempts: 1, backoffMs: 1 } as Parameters<typeof openQueues>[2]);
    // The fold as the hourly job runs it once today is past the detail window. A day is passed
    // once (later runs look only at what it left in detail, journey-left): the bench writes to
    // "today" again after its first fold, so the mark is cleared to fold the day again.
    const fold = async (): Promise<CompactResult> => {
      await redis.del(keys.journeyLeft(epochDayOf(Date.now())));
      return compactJourneys(redis, keys, {
        retentionDays: RETENTION_DAYS,
        detailDays: DETAIL_DAYS,
        nowMs: Date.now() + (DETAIL_DAYS + 1) * DAY_MS,
        deadLetterDeliveries: () => deadLetterDeliveries(queues),
      });
    };
    const daemon = await spawnDaemon(
      {
        redisUrl: own.url,
        prefix,
        apiUrl: sandbox.url,
        carrierKey: sandbox.keys.carriers[carrier] ?? '',
        spool,
        logFile: join(env.logDir, 'item-bytes.log'),
        logFileLevel: 'warn',
        env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
      },
      ['watcher', 'worker'],
    );
    const read = async (): Promise<Reading> => {
      await redis.call('SLOWLOG', 'RESET');
      const overheads = await memoryOverheads(redis);
      return { used: await usedMemory(redis), groups: await memoryByPattern(redis, prefix), ...overheads };
    };
    const archived = async (): Promise<number> => (await listFiles(join(spool, 'archive'))).filter((f) => !f.endsWith('.json')).length;
    const bytesOf = (groups: KeyGroup[], pattern: RegExp): number => groups.filter((g) => pattern.test(g.pattern)).reduce((s, g) => s + g.bytes, 0);
    // Settled: every file archived, no item job left in a queue's sets, the outcome lists empty.
    const settle = async (total: number): Promise<void> => {
      await waitFor(async () => (await archived()) >= total, { timeoutMs: 300_000, what: `${total} labels archived`, intervalMs: 100 });
      await waitFor(
        async () => {
          const groups = await memoryByPattern(redis, prefix);
          return bytesOf(groups, /^(label|cte|events?):(\*|active|wait|completed|failed|delayed|prioritized)$|^outcomes(:|$)/) === 0;
        },
        { timeoutMs: 60_000, what: 'no job and no outcome left', intervalMs: 250 },
      );
    };
    // The API limiter's window holds a slot per request of the last 60 s (and the key lives on for
    // 60 s + the longest request): bounded by the limit, no item's. Deleted (DEL frees at once)
    // before a reading; the daemon is idle then and the limits are lifted.
    const dropLimiter = async (): Promise<number> => {
      const [, limiterKeys] = await redis.scan('0', 'MATCH', `${prefix}:limiter:*`, 'COUNT', 100_000);
      const bytes = bytesOf(await memoryByPattern(redis, prefix), /^limiter(:|$)/);
      if (limiterKeys.length > 0) await redis.del(...limiterKeys);
      return bytes;
    };
    // How long one key of the pattern stays.
    const ttlOfKey = async (pattern: string): Promise<string> => {
      const [, found] = await redis.scan('0', 'MATCH', `${prefix}:${pattern}`, 'COUNT', 1_000_000);
      const key = found[0];
      if (key === undefined) return '?';
      const ttl = await redis.ttl(key);
      return ttl < 0 ? 'no expiry' : ttl >= 86_400 ? `${round(ttl / 86_400, 1)} d` : `${round(ttl / 3600, 1)} h`;
    };
    const drop = async (from: number, count: number): Promise<void> => {
      const files = Array.from({ length: count }, (_, i) => ({ name: `${sandbox.state.addDelivery({}).id}.pdf`, bytes: labelPdf(`bytes ${from + i}`, 1500) }));
      const dir = await stageFiles(staging, files);
      await dropAll(
        dir,
        join(spool, 'labels'),
        files.map((f) => f.name),
      );
    };
    try {
      await daemon.ready;
      env.progress(`item-bytes: warm-up of ${WARM_UP} labels`);
      await drop(0, WARM_UP);
      await settle(WARM_UP);
      await dropLimiter();
      const warmUpFolded = await fold();
      const before = await read();
      env.progress(`item-bytes: ${MEASURED} labels`);
      const started = Date.now();
      await drop(WARM_UP, MEASURED);
      await settle(WARM_UP + MEASURED);
      const settleMs = Date.now() - started;
      await sleep(2000);
      const atSettle = await read();
      const limiterBytes = await dropLimiter();
      const after = await read();
      // Each pattern's TTL read before the fold (the fold deletes the full sha256 index's keys).
      const ttlBefore = new Map<string, string>();
      for (const g of after.groups) ttlBefore.set(g.pattern.replace(/:\*:[0-9a-f]{1,4}$/, ':*:*'), await ttlOfKey(g.pattern));
      const folded = await fold();
      if (folded.folded !== MEASURED) throw new Error(`expected ${MEASURED} deliveries folded, got ${JSON.stringify(folded)}`);
      const afterFold = await read();
      const errors = daemon.errorCount();
      const requests = sandbox.requests().filter((r) => r.endpoint === 'label');
      if (requests.length !== WARM_UP + MEASURED || requests.some((r) => r.status !== 200))
        throw new Error(`expected ${WARM_UP + MEASURED} label requests, all 200; got ${requests.length}`);

      // What grew, by pattern, each with one key's TTL.
      // memoryByPattern keeps an all-letters shard (`journey-sha:<day>:fea`) apart: one row per kind of key here.
      const kindOf = (pattern: string): string => pattern.replace(/:\*:[0-9a-f]{1,4}$/, ':*:*');
      const byPattern = new Map<string, { keys: number; bytes: number }>();
      for (const [groups, sign] of [
        [after.groups, 1],
        [before.groups, -1],
      ] as const) {
        for (const g of groups) {
          const a = byPattern.get(kindOf(g.pattern)) ?? { keys: 0, bytes: 0 };
          byPattern.set(kindOf(g.pattern), { keys: a.keys + sign * g.keys, bytes: a.bytes + sign * g.bytes });
        }
      }
      const grownOf = (groups: KeyGroup[]): Array<[string, { keys: number; bytes: number }]> => {
        const out = new Map<string, { keys: number; bytes: number }>();
        for (const [list, sign] of [
          [groups, 1],
          [before.groups, -1],
        ] as const) {
          for (const g of list) {
            const a = out.get(kindOf(g.pattern)) ?? { keys: 0, bytes: 0 };
            out.set(kindOf(g.pattern), { keys: a.keys + sign * g.keys, bytes: a.bytes + sign * g.bytes });
          }
        }
        return [...out.entries()].filter(([, v]) => v.bytes !== 0 || v.keys !== 0).sort((a, b) => b[1].bytes - a[1].bytes);
      };
      const grown = [...byPattern.entries()].filter(([, v]) => v.bytes !== 0 || v.keys !== 0).sort((a, b) => b[1].bytes - a[1].bytes);
      const ttlOf = async (pattern: string): Promise<string> => ttlBefore.get(pattern) ?? (await ttlOfKey(pattern));
      const breakdown: Array<{ pattern: string; keys: number; bytesPerItem: number; ttl: string }> = [];
      for (const [pattern, v] of grown) breakdown.push({ pattern, keys: v.keys, bytesPerItem: v.bytes / MEASURED, ttl: await ttlOf(pattern) });
      const breakdownFolded: Array<{ pattern: string; keys: number; bytesPerItem: number; ttl: string }> = [];
      for (const [pattern, v] of grownOf(afterFold.groups))
        breakdownFolded.push({ pattern, keys: v.keys, bytesPerItem: v.bytes / MEASURED, ttl: await ttlOf(pattern) });
      const perItemFolded = (afterFold.used - before.used) / MEASURED;
      const keyBytesFolded = breakdownFolded.reduce((s, b) => s + b.bytesPerItem, 0);
      const perItem = (after.used - before.used) / MEASURED;
      const perItemAtSettle = (atSettle.used - before.used) / MEASURED;
      const keyBytes = breakdown.reduce((s, b) => s + b.bytesPerItem, 0);
      const overheadPerItem = (after.clientBytes - before.clientBytes + after.scriptBytes - before.scriptBytes) / MEASURED;
      return {
        figures: [
          {
            metric: `Redis used_memory a settled label in detail, the last day (${MEASURED.toLocaleString('en-US')} after ${WARM_UP} of warm-up)`,
            value: Math.round(perItem),
            unit: 'bytes',
            reference: `${round(before.used / 1024 ** 2, 2)} → ${round(after.used / 1024 ** 2, 2)} MB, read once settled (archived, jobs removed, outcome list empty), the API limiter's 60 s window deleted (${round(limiterBytes / MEASURED, 1)} B an item while it was full: bounded by the limit, no item's); with it: ${Math.round(perItemAtSettle)} B an item; settled in ${round(settleMs / 1000, 1)} s`,
          },
          {
            metric: `Redis used_memory a settled label once folded (a day past history.detailDays ${DETAIL_DAYS}: kept for the rest of the ${RETENTION_DAYS}-day window)`,
            value: Math.round(perItemFolded),
            unit: 'bytes',
            reference: `${round(after.used / 1024 ** 2, 2)} → ${round(afterFold.used / 1024 ** 2, 2)} MB; ${folded.folded} deliveries folded (journeyCompact with a clock ${DETAIL_DAYS + 1} days later), ${folded.left} left in detail; the warm-up folded the same way before the first reading (${warmUpFolded.folded})`,
            target: `≤ ${ITEM_BYTES_TARGET} (issue 46)`,
            isMet: perItemFolded <= ITEM_BYTES_TARGET,
          },
          {
            metric: 'of which in keys (MEMORY USAGE, by pattern: bytes an item, TTL of one key)',
            value: Math.round(keyBytes),
            unit: 'bytes',
            reference: breakdown
              .filter((b) => Math.abs(b.bytesPerItem) >= 1)
              .map((b) => `${b.pattern} ${round(b.bytesPerItem, 1)} B (${b.keys >= 0 ? '+' : ''}${b.keys} keys, ${b.ttl})`)
              .join(', '),
          },
          {
            metric: 'of which in keys once folded (MEMORY USAGE, by pattern)',
            value: Math.round(keyBytesFolded),
            unit: 'bytes',
            reference: breakdownFolded
              .filter((b) => Math.abs(b.bytesPerItem) >= 1)
              .map((b) => `${b.pattern} ${round(b.bytesPerItem, 1)} B (${b.keys >= 0 ? '+' : ''}${b.keys} keys, ${b.ttl})`)
              .join(', '),
          },
        ],
        notes: [
          `the rest of used_memory (${Math.round(perItem - keyBytes)} B an item) is Redis' own: allocator rounding and dict growth MEMORY USAGE does not see; client buffers and script caches moved ${round(overheadPerItem, 1)} B an item`,
          `daemon error lines ${errors}; private redis-server; daemon watcher+worker (delivery thread on), limits lifted`,
        ],
        details: {
          before: before.used,
          atSettle: atSettle.used,
          after: after.used,
          afterFold: afterFold.used,
          limiterBytes,
          perItem,
          perItemAtSettle,
          perItemFolded,
          breakdown,
          breakdownFolded,
          folded,
          warmUpFolded,
          settleMs,
        },
        measures: { 'bytes a settled item': perItem, 'bytes a folded item': perItemFolded },
      };
    } finally {
      await daemon.stop();
      await queues.close();
      redis.disconnect();
      await sandbox.close();
      await own.stop();
      await setAside(env, spool, staging);
    }
  },
};
