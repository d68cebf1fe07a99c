/**
 * The outcome side in one call a batch (issue 46, queue/outcome-list.ts `take`, outcome/consumer.ts):
 * the settle of the batch just applied, the journey steps its moves recorded and the read of the
 * next batch are one script call; the wait's BLMOVE hands over the message that woke it, so a wake
 * needs no read of its own. Counted from Redis' own side (MONITOR on a redis-server of this file's
 * own), and what the calls left read back: the list empty, every message applied once, the steps
 * in the journey as the history reads them.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { journeyAppendCall, type JourneyEntry } from '../../src/journey/journey.js';
import { readJourney } from '../../src/journey/journey-read.js';
import { silentLogger } from '../../src/log.js';
import { startOutcomeConsumer } from '../../src/outcome/consumer.js';
import { outcomeEntryJson, outcomeKeys } from '../../src/queue/outcome-list.js';
import { createKeys } from '../../src/store/keys.js';
import type { OutcomeMessage } from '../../src/store/payloads.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { recordMonitor, scriptNames, tally, type MonitorLine } from '../bench/support/monitor.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';

let own: OwnRedis;
beforeAll(async () => {
  own = await startOwnRedis();
});
afterAll(async () => {
  await own.close();
});

const keys = createKeys('{outcome-fold}');
const TTL_SEC = 86_400;

const message = (n: number): OutcomeMessage => ({
  kind: 'label',
  jobId: `label.d${n}.c${n}`,
  deliveryId: `d${n}`,
  result: 'accepted',
  origin: { source: 'spool', spoolId: 'x', fileName: `d${n}.pdf`, contentId: `c${n}` },
  attempts: 1,
  at: new Date(0).toISOString(),
});

/** A MONITOR line, an ECHO of the test's own named by its marker. */
type Line = MonitorLine & { marker?: string };

/**
 * The lines between the first batch's last move and the second batch's first: the first move
 * that starts after one ended, and the last end before it.
 */
function betweenBatches(lines: readonly Line[]): Line[] {
  const next = lines.findIndex((l, i) => l.marker?.startsWith('apply ') === true && lines.slice(0, i).some((m) => m.marker?.startsWith('applied ') === true));
  expect(next).toBeGreaterThan(0);
  const last = lines.slice(0, next).findLastIndex((l) => l.marker?.startsWith('applied ') === true);
  return lines.slice(last + 1, next);
}

describe('the outcome side in one call a batch', () => {
  it("a batch's settle, its journey steps and the next batch's read are one call; a wake needs no read of its own", async () => {
    const redis = connectRedis(own.url, 'outcome-fold-consumer');
    const pusher = connectRedis(own.url, 'outcome-fold-test') as Redis;
    const recorder = await recordMonitor(own.url, await scriptNames());
    // The markers' text: MONITOR lines keep only the command's name, so the test keeps its own order.
    const markers: string[] = [];
    const mark = async (text: string): Promise<void> => {
      markers.push(text);
      await pusher.echo(text);
    };
    const list = outcomeKeys(keys, 'spool').list;
    const pending: JourneyEntry[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const applied: string[] = [];
    const consumer = startOutcomeConsumer({
      redis,
      keys,
      spoolId: 'spool',
      apply: async (m) => {
        await mark(`apply ${m.deliveryId}`);
        if (m.deliveryId === 'd1') await released;
        applied.push(m.deliveryId);
        pending.push({ deliveryId: m.deliveryId, step: { k: 'l', s: 'archived', f: `${m.deliveryId}.pdf`, to: 'archive/labels/x/' } });
        await mark(`applied ${m.deliveryId}`);
      },
      isHeld: () => true,
      // The writer's steps as `JourneyWriter.takeCall` gives them, without its flush timer (a slow
      // machine must not let the timer write them on a call of its own).
      takeJourneySteps: () => (pending.length === 0 ? null : journeyAppendCall(keys, TTL_SEC, pending.splice(0), Date.now())),
      clock: systemClock,
      logger: silentLogger,
    });
    try {
      const source = `127.0.0.1:${pusher.stream.localPort ?? 0}`;
      // Waiting on an empty list.
      await waitFor(() => recorder.lines.some((l) => l.name === 'blmove'), { what: 'the consumer waiting', timeoutMs: 10_000 });
      // Three messages at once: the wake hands over the first (held in its move), the rest wait (had
      // the wait just timed out, the read after it takes all three: then 1–3 are the first batch).
      await pusher.rpush(list, ...[1, 2, 3].map((n) => outcomeEntryJson(message(n))));
      await waitFor(() => markers.includes('apply d1'), { what: 'the first message applied' });
      await pusher.rpush(list, ...[4, 5].map((n) => outcomeEntryJson(message(n))));
      release();
      await waitFor(() => applied.length === 5, { what: 'five messages applied' });
      await consumer.drain(5000);
      await waitFor(async () => (await pusher.llen(list)) === 0, { what: 'the list empty' });
      await mark('end');
      await waitFor(() => recorder.lines.filter((l) => l.name === 'echo').length >= markers.length, { what: 'the markers in MONITOR' });

      // Name each ECHO line by its marker, in order.
      let echo = 0;
      const lines: Line[] = recorder.lines
        .filter((l) => l.source === 'lua' || l.name !== 'echo' || l.source === source)
        .map((l) => (l.name === 'echo' ? { ...l, marker: markers[echo++] } : l));
      const consumerLines = lines.filter((l) => l.source !== source);
      const t = tally(consumerLines.filter((l) => l.name !== 'echo'));
      // Before: LRANGE to read, a MULTI/EXEC of outcomesSettle + journeyAppend to settle, outcomesMoveDue.
      for (const gone of ['lrange', 'multi', 'exec', 'evalsha journeyAppend', 'evalsha outcomesSettle', 'evalsha outcomesMoveDue']) {
        expect(t.byTopLevel.get(gone) ?? 0, gone).toBe(0);
      }
      // What else there is: the connections' setup (CLIENT SETNAME, INFO) and `drain`'s LLEN + ZCARD.
      const outcomeSide = [...t.byTopLevel.keys()].filter((name) => !['client', 'info', 'llen', 'zcard'].includes(name));
      expect(outcomeSide.sort()).toEqual(['blmove', 'eval outcomesTake', 'evalsha outcomesTake']);

      // After the first batch's moves: one call settles it, writes its steps and reads the next batch.
      const settle = betweenBatches(lines).filter((l) => l.source !== source);
      expect(settle.filter((l) => l.source !== 'lua').map((l) => l.name)).toEqual([expect.stringMatching(/^evalsha? outcomesTake$/)]);
      const inner = settle.filter((l) => l.source === 'lua').map((l) => l.name);
      // The settle (its head read and trimmed), the journey's steps (a read and a write each, the
      // day's expiry once), the next batch's read.
      const steps = (inner.length - 4) / 2;
      expect(steps).toBeGreaterThanOrEqual(1);
      expect(inner).toEqual(['lrange', 'ltrim', ...Array.from({ length: steps }, () => ['hget', 'hset']).flat(), 'expireat', 'lrange']);

      // The second batch: after the first of its moves, one call (its settle, steps and the read that
      // finds the list empty), then the wait (and, once a second, its read).
      const rest = lines.slice(lines.indexOf(betweenBatches(lines).at(-1)!) + 1);
      // (`drain`'s LLEN and ZCARD may come between: the settle waits for the batch's gather.)
      const calls = rest.filter((l) => l.source !== source && l.source !== 'lua' && !['llen', 'zcard'].includes(l.name)).map((l) => l.name);
      expect(calls[0]).toBe('evalsha outcomesTake');
      expect(calls.slice(1).filter((name) => !['blmove', 'evalsha outcomesTake', 'llen', 'zcard'].includes(name))).toEqual([]);
      expect(new Set(applied)).toEqual(new Set(['d1', 'd2', 'd3', 'd4', 'd5']));
      expect(applied.length).toBe(5);

      // The steps, as the history reads them.
      const window = { retentionDays: 30, nowMs: Date.now() };
      for (const n of [1, 2, 3, 4, 5]) {
        expect((await readJourney(redis, keys, `d${n}`, window)).map((s) => s.step)).toEqual(['archived']);
      }
    } finally {
      await consumer.stop();
      await recorder.stop();
      await closeRedis(redis);
      await closeRedis(pusher);
    }
  });
});
