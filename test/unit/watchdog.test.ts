/**
 * The watchdog's course through a stall (runtime/watchdog/watchdog.ts), with checks whose answers the test
 * sets: one error line and one recovery per stall, `stall recovered` when no check finds it any
 * more, and `onFatal` (the daemon's /healthz 503 and exit 1) when it lasts the bound again. The
 * checks themselves run against the real daemon in test/e2e/watchdog.test.ts.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createWatchdog, tickMsOf, type Stall, type StallState } from '../../src/runtime/watchdog/watchdog.js';
import { mainThreadRunCheck, workInProgressCheck } from '../../src/runtime/watchdog/stall-checks.js';
import { createProgressTrack } from '../../src/progress.js';

function loggerWithLines(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    }),
  });
  return { logger, lines };
}

describe('the watchdog', () => {
  it('tells a stall once, recovers it once, and says when it is over', async () => {
    const { logger, lines } = loggerWithLines();
    let nowMs = 1_000_000;
    let recoveries = 0;
    let stall: Stall | null = { what: 'the delivery thread does not answer', since: nowMs - 5000, recover: async () => void (recoveries += 1) };
    const fatal: string[] = [];
    const changes: Array<StallState | null> = [];
    const watchdog = createWatchdog({ stallMs: 3000, logger, onFatal: (reason) => fatal.push(reason), now: () => nowMs });
    watchdog.onChange((state) => changes.push(state));
    watchdog.start([async () => stall]);
    await watchdog.tick();
    nowMs += 1000;
    await watchdog.tick();
    logger.flush();
    expect(watchdog.current()).toMatchObject({ what: 'the delivery thread does not answer', since: 995_000, isFatal: false });
    expect(recoveries).toBe(1);
    expect(lines.filter((line) => line['level'] === 50).map((line) => line['msg'])).toEqual([
      'stalled: the delivery thread does not answer since 1970-01-01T00:16:35.000Z: recovering',
    ]);
    stall = null;
    nowMs += 1000;
    await watchdog.tick();
    watchdog.close();
    logger.flush();
    expect(watchdog.current()).toBeNull();
    expect(lines.filter((line) => line['msg'] === 'stall recovered')).toHaveLength(1);
    expect(changes.map((state) => state?.what ?? null)).toEqual(['the delivery thread does not answer', null]);
    expect(fatal).toEqual([]);
  });

  it('calls onFatal once when the stall outlasts the bound after it was seen', async () => {
    const { logger } = loggerWithLines();
    let nowMs = 0;
    const fatal: string[] = [];
    const watchdog = createWatchdog({ stallMs: 3000, logger, onFatal: (reason) => fatal.push(reason), now: () => nowMs });
    watchdog.start([async () => ({ what: '4 jobs ready and none taken', since: 0, recover: async () => {} })]);
    for (nowMs = 0; nowMs <= 2999; nowMs += 750) await watchdog.tick();
    expect(fatal).toEqual([]);
    nowMs = 3000;
    await watchdog.tick();
    nowMs = 4000;
    await watchdog.tick();
    watchdog.close();
    expect(fatal).toEqual(['stalled: 4 jobs ready and none taken since 1970-01-01T00:00:00.000Z; not recovered within 3000 ms']);
    expect(watchdog.current()?.isFatal).toBe(true);
  });

  /** A watchdog (bound 3 s) on a stall that never clears, whose recovery step ends when the test says, ticked at the given instant. */
  function stallWithRecovery(): { tickAt(ms: number): Promise<void>; endRecovery(): Promise<void>; fatal: string[]; close(): void } {
    const { logger } = loggerWithLines();
    let nowMs = 0;
    const fatal: string[] = [];
    let finish: () => void = () => {};
    const recovery = new Promise<void>((resolve) => (finish = resolve));
    const watchdog = createWatchdog({ stallMs: 3000, logger, onFatal: (reason) => fatal.push(reason), now: () => nowMs });
    watchdog.start([async () => ({ what: 'the delivery thread does not answer', since: 0, recover: () => recovery })]);
    return {
      tickAt: (ms) => ((nowMs = ms), watchdog.tick()),
      endRecovery: async () => {
        finish();
        await recovery;
        await new Promise((resolve) => setImmediate(resolve));
      },
      fatal,
      close: () => watchdog.close(),
    };
  }

  it('gives a recovery still under way (a new thread starting) up to one bound more', async () => {
    const run = stallWithRecovery();
    await run.tickAt(0);
    await run.tickAt(4000);
    expect(run.fatal).toEqual([]);
    await run.tickAt(6000);
    expect(run.fatal).toHaveLength(1);
    await run.endRecovery();
    run.close();
  });

  it('gives a recovery that ended near the bound two checks more to show its result', async () => {
    const run = stallWithRecovery();
    await run.tickAt(0);
    await run.tickAt(2900);
    await run.endRecovery();
    // Past the bound, the new thread not seen yet: two checks (750 ms each at this bound) more.
    for (const ms of [3000, 3750]) await run.tickAt(ms);
    expect(run.fatal).toEqual([]);
    await run.tickAt(4400);
    expect(run.fatal).toHaveLength(1);
    run.close();
  });

  it('takes a failing check for no stall, and checks a few times per bound, at most every 5 s', async () => {
    const { logger } = loggerWithLines();
    const watchdog = createWatchdog({ stallMs: 3000, logger, onFatal: () => {} });
    watchdog.start([
      async () => {
        throw new Error('Connection is closed.');
      },
    ]);
    await watchdog.tick();
    watchdog.close();
    expect(watchdog.current()).toBeNull();
    expect([tickMsOf(3000), tickMsOf(60_000), tickMsOf(600)]).toEqual([750, 5000, 250]);
  });
});

describe('the work-in-progress check (claims, outcome passes)', () => {
  const STALL = 10_000;
  const setUp = () => {
    let nowMs = 1_000_000;
    const track = createProgressTrack(() => nowMs);
    let troubled = false;
    const check = workInProgressCheck(
      'a file claim does not finish',
      track,
      STALL,
      () => troubled,
      async () => {},
    );
    return {
      track,
      check: () => check(nowMs),
      advance: (ms: number) => (nowMs += ms),
      setTroubled: (value: boolean) => (troubled = value),
      now: () => nowMs,
    };
  };

  it('sees a run going for the bound while none ended for the bound, since the last progress', async () => {
    const t = setUp();
    t.advance(5000);
    t.track.begin()();
    const endedAt = t.now();
    t.track.begin(); // never ends
    t.advance(STALL - 1);
    expect(await t.check()).toBeNull();
    t.advance(1);
    expect(await t.check()).toMatchObject({ what: 'a file claim does not finish', since: endedAt });
  });

  it('is not a stall while other runs end (claims waiting for a check slot), nor while Redis is troubled, nor when nothing runs', async () => {
    const t = setUp();
    t.track.begin(); // a slow one, still going
    for (let i = 0; i < 5; i += 1) {
      t.advance(STALL / 2);
      t.track.begin()(); // others begin and end meanwhile
      expect(await t.check()).toBeNull();
    }
    t.advance(STALL);
    t.setTroubled(true);
    expect(await t.check()).toBeNull();
    t.setTroubled(false);
    expect(await t.check()).not.toBeNull();
    const idle = setUp();
    idle.advance(10 * STALL);
    expect(await idle.check()).toBeNull();
  });
});

describe('the run check with the workers on the main thread', () => {
  it('tells a run past its bound, not one within it, nor one while Redis is troubled', async () => {
    let troubled = false;
    let run: { jobId: string; since: number } | null = { jobId: 'label.d1.c1', since: 1_000_000 };
    const check = mainThreadRunCheck(
      () => run,
      65_000,
      60_000,
      () => troubled,
    );
    expect(await check(1_000_000 + 64_999)).toBeNull();
    expect(await check(1_000_000 + 65_000)).toMatchObject({ what: 'a run of job label.d1.c1 does not end', since: 1_000_000 });
    troubled = true;
    expect(await check(1_000_000 + 70_000)).toBeNull();
    troubled = false;
    run = null;
    expect(await check(1_000_000 + 70_000)).toBeNull();
  });
});
