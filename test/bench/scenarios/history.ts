/**
 * history: what the journeys cost in Redis and how fast one is read back. Writes journeys in the
 * daemon's layout and record format (journey/journey.ts `appendSteps`; the push gate's Lua writes
 * the same records with Redis' clock), with realistic names (UUID delivery ids, file names, a host
 * name, sha256), into a private redis-server, in two mixes:
 *  - usual: each delivery has a label, a CT-e (6 records, 7 steps each: seen+claimed+valid in one
 *    record, queued, attempt + its answer, accepted, archived) and two collecting events from an
 *    events file (4 records, 3 steps each: received, attempt + answer, accepted): 20 steps;
 *  - alone: every item is its delivery's only one (the worst case for per-delivery bookkeeping).
 * Measured: bytes of Redis per step (used_memory after − before over the steps the journeys tell,
 * indexes included; MEMORY USAGE of the day's hash), one delivery's journey read (`readJourney`,
 * 31 days) and a file lookup (`findByFile`) over random deliveries: median, p99, max.
 * Quick: 20,000 items; full (or BENCH_HISTORY_ITEMS): 1,000,000 items (the issue's figure).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { appendSteps, epochDayOf, eventRef, prepareJourney, type JourneyEntry, type StoredStep } from '../../../src/journey/journey.js';
import { findByFile, readJourney } from '../../../src/journey/journey-read.js';
import { createKeys } from '../../../src/store/keys.js';
import { benchPrefix, cleanupPrefix, startPrivateRedis, usedMemory } from '../support/redis.js';
import type { BenchEnv, Figure, Scenario } from '../support/report.js';
import { round } from '../support/wait.js';

export const HISTORY_TARGETS = { bytesPerStep: 150, readMs: 50 } as const;
const TTL_SEC = 30 * 86_400;
const WHO = 'worker-7f9c2/48213';

/** A label's or CT-e's journey: 6 records, 7 steps (seen, claimed, valid, queued, attempt, accepted, archived). */
function documentJourney(deliveryId: string, k: 'l' | 'c'): JourneyEntry[] {
  const f = `${deliveryId}.${k === 'l' ? 'pdf' : 'xml'}`;
  const sha256 = createHash('sha256').update(f).digest('hex');
  const base: StoredStep = { k, s: '', h: sha256.slice(0, 8) };
  return [
    { deliveryId, step: { ...base, s: 'seen', f, h: sha256, z: 48_213, m: Date.now() - 5000, w: WHO }, file: { name: f, sha256 } },
    { deliveryId, step: { ...base, s: 'queued', g: `${((Date.now() - 5000) * 1000).toString(36)}.${(Date.now() * 1000).toString(36)}` } },
    { deliveryId, step: { ...base, s: 'attempt', a: '1c0ffe', n: 1, w: WHO } },
    { deliveryId, step: { k, s: 'answer', a: '1c0ffe', ms: 132, st: 200 } },
    { deliveryId, step: { ...base, s: 'accepted' } },
    { deliveryId, step: { ...base, s: 'archived', to: `archive/${k === 'l' ? 'labels' : 'cte'}/2026-11-25/` } },
  ];
}

/** A collecting event's journey from an events file: 4 records, 3 steps (received, attempt, accepted). */
function eventJourney(deliveryId: string, n: number): JourneyEntry[] {
  const e = new Date(Date.UTC(2026, 10, 24, 8, 0, 0) + n * 1000).toISOString();
  const ref = eventRef(e);
  const file = 'collect-2026-11-24.ndjson';
  return [
    { deliveryId, step: { k: 'e', s: 'received', e, i: ref, f: file, l: n }, file: { name: file, sha256: 'ab'.repeat(32) } },
    { deliveryId, step: { k: 'e', s: 'attempt', i: ref, a: '9f2c41', n: 1, w: WHO } },
    { deliveryId, step: { k: 'e', s: 'answer', a: '9f2c41', ms: 84, st: 200 } },
    { deliveryId, step: { k: 'e', s: 'accepted', i: ref } },
  ];
}

/**
 * 'usual': each delivery has a label, a CT-e and two collecting events (4 items, 20 steps);
 * 'alone': each item is its own delivery's only one, labels and events alternating (the worst case:
 * every step pays its delivery's bookkeeping).
 */
function itemsOf(mix: 'usual' | 'alone', i: number): { entries: JourneyEntry[]; steps: number; items: number; deliveryId: string } {
  const deliveryId = randomUUID();
  if (mix === 'usual')
    return {
      entries: [
        ...documentJourney(deliveryId, 'l'),
        ...documentJourney(deliveryId, 'c'),
        ...eventJourney(deliveryId, 2 * i),
        ...eventJourney(deliveryId, 2 * i + 1),
      ],
      steps: 20,
      items: 4,
      deliveryId,
    };
  return i % 2 === 0
    ? { entries: documentJourney(deliveryId, 'l'), steps: 7, items: 1, deliveryId }
    : { entries: eventJourney(deliveryId, i), steps: 3, items: 1, deliveryId };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

export const historyScenario: Scenario = {
  name: 'history',
  async run(env) {
    const items = Number(process.env['BENCH_HISTORY_ITEMS'] ?? (env.isQuick ? 20_000 : 1_000_000));
    const usual = await measure(env, 'usual', items);
    const alone = await measure(env, 'alone', Math.min(items, 100_000));
    return {
      figures: [...usual.figures, ...alone.figures],
      notes: [
        ...usual.notes,
        ...alone.notes,
        'records written with appendSteps (the claim and outcome path); the gate scripts write the same JSON with Redis time',
      ],
    };
  },
};

interface Measured {
  figures: Figure[];
  notes: string[];
}

async function measure(env: BenchEnv, mix: 'usual' | 'alone', items: number): Promise<Measured> {
  const own = await startPrivateRedis(16_384);
  const redis = new Redis(own.url, { maxRetriesPerRequest: null });
  const prefix = benchPrefix('history');
  const keys = createKeys(prefix);
  try {
    const before = await usedMemory(redis);
    const deliveries: string[] = [];
    const expected = new Map<string, number>();
    let steps = 0;
    let records = 0;
    let written = 0;
    let n = 0;
    prepareJourney(redis);
    while (written < items) {
      const entries: JourneyEntry[] = [];
      while (entries.length < 2000 && written < items) {
        const item = itemsOf(mix, n);
        n += 1;
        entries.push(...item.entries);
        steps += item.steps;
        written += item.items;
        deliveries.push(item.deliveryId);
        if (deliveries.length % 997 === 0) expected.set(item.deliveryId, item.steps);
      }
      records += entries.length;
      await appendSteps(redis.pipeline(), keys, TTL_SEC, entries, Date.now()).exec();
      if (n % 50_000 < 100) env.progress(`history (${mix}): ${written} of ${items} items written`);
    }
    const after = await usedMemory(redis);
    const bytesPerStep = (after - before) / steps;
    const dayBytes = Number(await redis.memory('USAGE', keys.journeyDay(epochDayOf(Date.now())), 'SAMPLES', 0));
    const window = { retentionDays: 30, nowMs: Date.now() };
    for (const [id, count] of expected) {
      const got = (await readJourney(redis, keys, id, window)).length;
      if (got !== count) throw new Error(`${id}: read back ${got} steps, wrote ${count}`);
    }
    const readMs: number[] = [];
    const fileMs: number[] = [];
    for (let i = 0; i < 500; i += 1) {
      const id = deliveries[Math.floor(Math.random() * deliveries.length)]!;
      let t0 = performance.now();
      const journey = await readJourney(redis, keys, id, window);
      readMs.push(performance.now() - t0);
      if (journey.length === 0) throw new Error(`no journey read back for ${id}`);
      t0 = performance.now();
      await findByFile(redis, keys, [`${id}.pdf`], 30, Date.now());
      fileMs.push(performance.now() - t0);
    }
    readMs.sort((a, b) => a - b);
    fileMs.sort((a, b) => a - b);
    const p99 = percentile(readMs, 0.99);
    const label = mix === 'usual' ? 'label + CT-e + 2 events a delivery' : 'one item a delivery';
    return {
      figures: [
        { metric: `${label}: items / steps recorded`, value: `${items} / ${steps}`, unit: '' },
        {
          metric: `${label}: Redis per step (all keys)`,
          value: round(bytesPerStep, 1),
          unit: 'bytes',
          target: `≤ ${HISTORY_TARGETS.bytesPerStep}`,
          isMet: bytesPerStep <= HISTORY_TARGETS.bytesPerStep,
        },
        { metric: `${label}: the day's journey hash per step (MEMORY USAGE)`, value: round(dayBytes / steps, 1), unit: 'bytes' },
        { metric: `${label}: read one journey, median`, value: round(percentile(readMs, 0.5), 2), unit: 'ms' },
        {
          metric: `${label}: read one journey, p99`,
          value: round(p99, 2),
          unit: 'ms',
          target: `≤ ${HISTORY_TARGETS.readMs}`,
          isMet: p99 <= HISTORY_TARGETS.readMs,
        },
        { metric: `${label}: read one journey, max`, value: round(readMs.at(-1) ?? 0, 2), unit: 'ms' },
        { metric: `${label}: find by file name (31 days of index), p99`, value: round(percentile(fileMs, 0.99), 2), unit: 'ms' },
      ],
      notes: [`${label}: ${records} records for ${steps} steps; used_memory +${round((after - before) / 1024 ** 2, 1)} MB`],
    };
  } finally {
    await cleanupPrefix(own.url, prefix).catch(() => undefined);
    redis.disconnect();
    await own.stop();
  }
}
