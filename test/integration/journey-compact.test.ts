/**
 * Folding settled journeys (issue 46 item 6; journey/journey-compact.ts) on a redis-server of the
 * test's own: a settled label of a day past the detail window keeps one compact record, and
 * `history` (by delivery and by sha256) still answers for it, saying which steps' detail was
 * folded, in both languages; an item in flight and a delivery with a dead letter waiting keep
 * every step; a day inside the window is not touched; the day's hash and sha256 index shrink.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { appendSteps, DAY_MS, epochDayOf, prepareJourney, shaIndexEntry, type JourneyEntry, type StoredStep } from '../../src/journey/journey.js';
import { findBySha256, readJourney } from '../../src/journey/journey-read.js';
import { compactJourneys } from '../../src/journey/journey-compact.js';
import { deadLetterDeliveries } from '../../src/queue/dead-letter.js';
import { describeStep } from '../../src/journey/step-text.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { createKeys } from '../../src/store/keys.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';

const prefix = 'cs-compact';
const keys = createKeys(prefix);
const TTL_SEC = 30 * 86_400;
const NOW = Date.now();
const TODAY = epochDayOf(NOW);
/** Three days ago: past a detail window of one day. */
const OLD_DAY = TODAY - 3;
const WINDOW = { retentionDays: 30, nowMs: NOW };
const DELIVERY = { maxAttempts: 1, backoffMs: 10 } as Parameters<typeof openQueues>[2];

let own: OwnRedis;
let redis: RedisConnection;
let queues: QueueSet;

beforeAll(async () => {
  own = await startOwnRedis();
  redis = connectRedis(own.url, 'journey-compact-test');
  queues = openQueues(redis, prefix, DELIVERY);
  prepareJourney(redis);
});

afterAll(async () => {
  await queues?.close();
  if (redis !== undefined) await closeRedis(redis);
  await own?.close();
});

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

async function write(atMs: number, ...entries: JourneyEntry[]): Promise<void> {
  await appendSteps(redis.pipeline(), keys, TTL_SEC, entries, atMs).exec();
}

/** A label's steps as the daemon writes them (the seen record carries the whole sha256, later steps 8 hex). */
function labelSteps(deliveryId: string, content: string, until: 'archived' | 'in-flight' | 'dead-lettered'): Array<{ entry: JourneyEntry; afterMs: number }> {
  const h = sha(content);
  const name = `${deliveryId}.pdf`;
  const step = (s: StoredStep): JourneyEntry => ({ deliveryId, step: s });
  const steps: Array<{ entry: JourneyEntry; afterMs: number }> = [
    { entry: { deliveryId, step: { k: 'l', s: 'seen', f: name, h, z: 1834, m: 1_700_000_000_000, w: 'host-a/101' }, file: { name, sha256: h } }, afterMs: 0 },
    { entry: step({ k: 'l', s: 'queued', f: name, h: h.slice(0, 8), g: 'lz3k.lz3m' }), afterMs: 3 },
    { entry: step({ k: 'l', s: 'attempt', h: h.slice(0, 8), n: 1, a: `${deliveryId}-a1`, w: 'host-a/101' }), afterMs: 5 },
  ];
  if (until === 'in-flight') return steps;
  if (until === 'dead-lettered')
    return [
      ...steps,
      { entry: step({ k: 'l', s: 'answer', a: `${deliveryId}-a1`, st: 404, ac: 'DELIVERY_NOT_FOUND', r: 'Delivery not found', ms: 12 }), afterMs: 20 },
      { entry: step({ k: 'l', s: 'dead-lettered', h: h.slice(0, 8), c: 'API_NOT_FOUND', ac: 'DELIVERY_NOT_FOUND' }), afterMs: 21 },
      { entry: step({ k: 'l', s: 'failed', h: h.slice(0, 8), to: 'failed/' }), afterMs: 30 },
    ];
  return [
    ...steps,
    { entry: step({ k: 'l', s: 'answer', a: `${deliveryId}-a1`, st: 200, ms: 12 }), afterMs: 20 },
    { entry: step({ k: 'l', s: 'accepted', h: h.slice(0, 8) }), afterMs: 21 },
    { entry: step({ k: 'l', s: 'archived', h: h.slice(0, 8), to: 'archive/2026-11-25/' }), afterMs: 30 },
  ];
}

async function writeLabel(deliveryId: string, content: string, atMs: number, until: 'archived' | 'in-flight' | 'dead-lettered'): Promise<void> {
  for (const { entry, afterMs } of labelSteps(deliveryId, content, until)) await write(atMs + afterMs, entry);
}

/** Memory of the keys a day's journeys and sha256 index take (MEMORY USAGE). */
async function dayBytes(day: number): Promise<number> {
  let total = 0;
  for (const pattern of [`${prefix}:journey:${day}`, `${prefix}:journey-sha:${day}:*`, `${prefix}:journey-shc:${day}:*`]) {
    const [, found] = await redis.scan('0', 'MATCH', pattern, 'COUNT', 100_000);
    for (const key of found) total += (await redis.memory('USAGE', key, 'SAMPLES', '0')) ?? 0;
  }
  return total;
}

describe('journey compaction', () => {
  it('folds a settled label of a past day into a compact record, history still answers; unsettled ones keep every step', async () => {
    const oldAt = OLD_DAY * DAY_MS + 10 * 3_600_000;
    const SETTLED = 300;
    for (let n = 0; n < SETTLED; n += 1) await writeLabel(`settled-${n}`, `label ${n}`, oldAt + n * 100, 'archived');
    await writeLabel('in-flight', 'label in flight', oldAt, 'in-flight');
    await writeLabel('dead-letter', 'label dead', oldAt, 'dead-lettered');
    // Yesterday: inside the detail window of one day.
    await writeLabel('recent', 'label recent', (TODAY - 1) * DAY_MS + 3_600_000, 'archived');

    // The dead letter waiting: a label job that failed its only attempt (BullMQ's own failed set).
    await queues.items.label.add('label', { kind: 'label', deliveryId: 'dead-letter' } as never);
    const connection = new Redis(own.url, { maxRetriesPerRequest: null });
    const worker = new Worker(
      'label',
      async () => {
        throw new Error('refused by the API');
      },
      { connection, prefix },
    );
    await waitFor(async () => (await queues.items.label.getFailedCount()) === 1, { timeoutMs: 10_000, what: 'the dead letter' });
    await worker.close();
    connection.disconnect();

    const before = {
      settled: await redis.hget(keys.journeyDay(OLD_DAY), 'settled-7'),
      inFlight: await redis.hget(keys.journeyDay(OLD_DAY), 'in-flight'),
      deadLetter: await redis.hget(keys.journeyDay(OLD_DAY), 'dead-letter'),
      recent: await redis.hget(keys.journeyDay(TODAY - 1), 'recent'),
      bytes: await dayBytes(OLD_DAY),
      history: await readJourney(redis, keys, 'settled-7', WINDOW),
    };
    expect(before.history.map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'accepted', 'archived']);

    const result = await compactJourneys(redis, keys, {
      retentionDays: 30,
      detailDays: 1,
      nowMs: NOW,
      deadLetterDeliveries: () => deadLetterDeliveries(queues),
    });
    expect(result).toMatchObject({ folded: SETTLED, left: 2 });

    // The settled label: one compact record, ~100 bytes where its steps took ~600.
    const record = (await redis.hget(keys.journeyDay(OLD_DAY), 'settled-7'))!;
    expect(record.startsWith('~')).toBe(true);
    expect(record.length).toBeLessThan(80);
    console.log(`journey-compact: a compact record: ${record}`);
    expect(before.settled!.length).toBeGreaterThan(5 * record.length);
    // Not settled: every step kept (in flight; a dead letter waiting, though its file was moved).
    expect(await redis.hget(keys.journeyDay(OLD_DAY), 'in-flight')).toBe(before.inFlight);
    expect(await redis.hget(keys.journeyDay(OLD_DAY), 'dead-letter')).toBe(before.deadLetter);
    // Inside the detail window: untouched.
    expect(await redis.hget(keys.journeyDay(TODAY - 1), 'recent')).toBe(before.recent);

    // History by delivery: its milestones with their times, the file, and what was folded.
    const history = await readJourney(redis, keys, 'settled-7', WINDOW);
    expect(history.map((s) => s.step)).toEqual(['seen', 'accepted', 'archived', 'folded']);
    const at = (name: string): string | undefined => before.history.find((s) => s.step === name)?.at;
    expect(history.map((s) => s.at).slice(0, 3)).toEqual([at('seen'), at('accepted'), at('archived')]);
    expect(history[0]).toMatchObject({ file: 'settled-7.pdf', sha256: sha('label 7').slice(0, 12), size: 1834, compacted: true });
    expect(history[2]).toMatchObject({ path: 'archive/2026-11-25/settled-7.pdf' });
    expect(history[2]!.path).toBe(before.history.find((s) => s.step === 'archived')?.path);
    const folded = history[3]!;
    expect(folded).toMatchObject({ folded: ['claimed', 'valid', 'queued', 'attempt'], attempt: 1, status: 200 });
    expect(describeStep(folded, 'en')).toBe(
      'detail folded (settled, past the detail window): claimed, valid, queued, attempts no longer kept step by step; 1 request, last answer HTTP 200',
    );
    expect(describeStep(folded, 'pt-BR')).toBe(
      'detalhe compactado (concluído, fora da janela de detalhe): reservado, verificado, na fila, tentativas não mais guardados passo a passo; 1 requisição, última resposta HTTP 200',
    );
    expect(describeStep(history[0]!, 'en')).toBe(`seen: 1834 bytes, sha256 ${sha('label 7').slice(0, 12)}…`);

    // History by sha256: a prefix and the whole hash find the folded label; its full index member is gone.
    for (const wanted of [sha('label 7').slice(0, 6), sha('label 7')]) {
      const found = await findBySha256(redis, keys, wanted, 30, NOW);
      expect(new Set(found.map((s) => s.delivery_id))).toEqual(new Set(['settled-7']));
      expect(found.map((s) => s.step)).toContain('folded');
    }
    const { shard, member } = shaIndexEntry(sha('label 7'), 'settled-7.pdf');
    expect(await redis.zscore(keys.journeyHashes(OLD_DAY, shard), member)).toBeNull();
    // The unsettled ones are still found in the full index.
    expect((await findBySha256(redis, keys, sha('label in flight').slice(0, 8), 30, NOW)).map((s) => s.step)).toContain('attempt');

    // The day's journeys and sha256 index shrink (MEMORY USAGE on this Redis).
    const after = await dayBytes(OLD_DAY);
    expect(after).toBeLessThan(before.bytes / 3);
    console.log(
      `journey-compact: day's keys ${before.bytes} → ${after} bytes for ${SETTLED} labels (${Math.round(before.bytes / SETTLED)} → ${Math.round(after / SETTLED)} a label)`,
    );

    // A second run finds nothing new; once the item in flight settles (today), its old day is folded too.
    expect(
      await compactJourneys(redis, keys, { retentionDays: 30, detailDays: 1, nowMs: NOW, deadLetterDeliveries: () => deadLetterDeliveries(queues) }),
    ).toMatchObject({ folded: 0, left: 2 });
    const h = sha('label in flight');
    await write(NOW, { deliveryId: 'in-flight', step: { k: 'l', s: 'answer', a: 'in-flight-a1', st: 200, ms: 9 } });
    await write(NOW + 1, { deliveryId: 'in-flight', step: { k: 'l', s: 'accepted', h: h.slice(0, 8) } });
    await write(NOW + 2, { deliveryId: 'in-flight', step: { k: 'l', s: 'archived', h: h.slice(0, 8), to: 'archive/' } });
    expect(
      await compactJourneys(redis, keys, { retentionDays: 30, detailDays: 1, nowMs: NOW, deadLetterDeliveries: () => deadLetterDeliveries(queues) }),
    ).toMatchObject({ folded: 1, left: 1 });
    expect((await redis.hget(keys.journeyDay(OLD_DAY), 'in-flight'))!.startsWith('~')).toBe(true);
    // Its steps of today keep their detail.
    expect((await readJourney(redis, keys, 'in-flight', WINDOW)).map((s) => s.step)).toEqual(['seen', 'folded', 'attempt', 'accepted', 'archived']);
  });
});
