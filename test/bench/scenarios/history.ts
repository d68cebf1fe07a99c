/**
 * history: what the journeys cost in Redis and how fast one is read back. Writes N items' journeys
 * in the daemon's layout and format (queue/journey.ts `appendSteps`; the push gate's Lua writes
 * the same records with Redis' clock) — a label (seen, claimed, valid, queued, attempt + answer,
 * accepted, archived: 8 records) for every other item, a collecting event (received, attempt +
 * answer, accepted: 4 records) for the rest, with realistic names (UUID delivery ids, file names,
 * a host name, sha256) — into a private redis-server, then measures:
 *  - bytes of Redis per recorded step: used_memory after − before, over the steps written
 *    (journey lists + the day, file and hash indexes), and MEMORY USAGE of a sample of journeys;
 *  - one delivery's journey read (`readJourney`: LRANGE + parse) and a file lookup (`findByFile`:
 *    31 days of index), over random deliveries: median, p99, max.
 * Quick: 20,000 items; full: 1,000,000 items (the figure).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { appendSteps, epochDayOf, eventRef, prepareJourney, type JourneyEntry, type StoredStep } from '../../../src/queue/journey.js';
import { findByFile, readJourney } from '../../../src/queue/journey-read.js';
import { createKeys } from '../../../src/queue/keys.js';
import { benchPrefix, cleanupPrefix, startPrivateRedis, usedMemory } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { round } from '../support/wait.js';

export const HISTORY_TARGETS = { bytesPerStep: 150, readMs: 50 } as const;
const TTL_SEC = 30 * 86_400;
const WHO = 'worker-7f9c2/48213';

function journeyOf(i: number, deliveryId: string): JourneyEntry[] {
  if (i % 2 === 1) {
    const e = new Date(Date.UTC(2026, 10, 24, 8, 0, 0) + i * 1000).toISOString();
    const ref = eventRef(e);
    return [
      {
        deliveryId,
        step: { k: 'e', s: 'received', e, i: ref, src: 'file', f: 'collect-2026-11-24.ndjson', l: i },
        file: { name: 'collect-2026-11-24.ndjson', sha256: 'ab'.repeat(32) },
      },
      { deliveryId, step: { k: 'e', s: 'attempt', i: ref, a: '9f2c41', n: 1, w: WHO } },
      { deliveryId, step: { k: 'e', s: 'answer', a: '9f2c41', ms: 84, st: 200 } },
      { deliveryId, step: { k: 'e', s: 'accepted', i: ref } },
    ];
  }
  const f = `${deliveryId}.pdf`;
  const sha256 = createHash('sha256').update(f).digest('hex');
  const base: StoredStep = { k: 'l', s: '', h: sha256.slice(0, 8) };
  return [
    { deliveryId, step: { ...base, s: 'seen', f, h: sha256, z: 48_213, m: Date.now() - 5000 }, file: { name: f, sha256 } },
    { deliveryId, step: { ...base, s: 'claimed', w: WHO } },
    { deliveryId, step: { ...base, s: 'valid' } },
    { deliveryId, step: { ...base, s: 'queued', f, g: `${(Date.now() - 5000) * 1000}.${Date.now() * 1000}` } },
    { deliveryId, step: { ...base, s: 'attempt', a: '1c0ffe', n: 1, w: WHO } },
    { deliveryId, step: { k: 'l', s: 'answer', a: '1c0ffe', ms: 132, st: 200 } },
    { deliveryId, step: { ...base, s: 'accepted' } },
    { deliveryId, step: { ...base, s: 'archived', to: `archive/labels/2026-11-25/${f}` } },
  ];
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

export const historyScenario: Scenario = {
  name: 'history',
  async run(env) {
    const items = env.isQuick ? 20_000 : 1_000_000;
    const own = await startPrivateRedis(8192);
    const redis = new Redis(own.url, { maxRetriesPerRequest: null });
    const prefix = benchPrefix('history');
    const keys = createKeys(prefix);
    try {
      const before = await usedMemory(redis);
      const deliveries: string[] = [];
      let steps = 0;
      const BATCH = 500;
      for (let start = 0; start < items; start += BATCH) {
        const entries: JourneyEntry[] = [];
        for (let i = start; i < Math.min(items, start + BATCH); i += 1) {
          const deliveryId = randomUUID();
          deliveries.push(deliveryId);
          entries.push(...journeyOf(i, deliveryId));
        }
        steps += entries.length;
        prepareJourney(redis);
        await appendSteps(redis.pipeline(), keys, TTL_SEC, entries, Date.now()).exec();
        if (start % 100_000 === 0) env.progress(`history: ${start} of ${items} items written`);
      }
      const after = await usedMemory(redis);
      const bytesPerStep = (after - before) / steps;
      // Every step was written today: the day's hash holds them all.
      const dayBytes = Number(await redis.memory('USAGE', keys.journeyDay(epochDayOf(Date.now())), 'SAMPLES', 0));
      const readMs: number[] = [];
      const fileMs: number[] = [];
      for (let i = 0; i < 500; i += 1) {
        const id = deliveries[Math.floor(Math.random() * deliveries.length)]!;
        let t0 = performance.now();
        const journey = await readJourney(redis, keys, id, { retentionDays: 30, nowMs: Date.now() });
        readMs.push(performance.now() - t0);
        if (journey.length === 0) throw new Error(`no journey read back for ${id}`);
        t0 = performance.now();
        await findByFile(redis, keys, [`${id}.pdf`], 30, Date.now());
        fileMs.push(performance.now() - t0);
      }
      readMs.sort((a, b) => a - b);
      fileMs.sort((a, b) => a - b);
      const p99 = percentile(readMs, 0.99);
      return {
        figures: [
          { metric: 'items recorded', value: items, unit: 'items' },
          { metric: 'steps recorded', value: steps, unit: 'steps' },
          {
            metric: 'Redis per step (all keys)',
            value: round(bytesPerStep, 1),
            unit: 'bytes',
            target: `≤ ${HISTORY_TARGETS.bytesPerStep}`,
            isMet: bytesPerStep <= HISTORY_TARGETS.bytesPerStep,
          },
          { metric: "the day's journey hash per step (MEMORY USAGE)", value: round(dayBytes / steps, 1), unit: 'bytes' },
          { metric: 'read one journey, median', value: round(percentile(readMs, 0.5), 2), unit: 'ms' },
          { metric: 'read one journey, p99', value: round(p99, 2), unit: 'ms', target: `≤ ${HISTORY_TARGETS.readMs}`, isMet: p99 <= HISTORY_TARGETS.readMs },
          { metric: 'read one journey, max', value: round(readMs.at(-1) ?? 0, 2), unit: 'ms' },
          { metric: 'find by file name (31 days of index), p99', value: round(percentile(fileMs, 0.99), 2), unit: 'ms' },
        ],
        notes: [
          `half labels (8 records each), half collecting events (4 records each); used_memory ${round((after - before) / 1024 ** 2, 1)} MB for ${steps} records`,
          'records written with appendSteps (the claim and outcome path); the gate scripts write the same JSON with Redis time',
        ],
      };
    } finally {
      await cleanupPrefix(own.url, prefix).catch(() => undefined);
      redis.disconnect();
      await own.stop();
    }
  },
};
