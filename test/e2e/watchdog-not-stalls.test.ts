/**
 * What the progress watchdog must not call a stall (issue 44), on the built binary with a small
 * CARRIER_SYNC_STALL_MS: a slow API, a 401 pause and a 429 storm held longer than the bound, and a
 * Redis outage longer than the bound with work in flight. Each keeps its own state.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropFile } from '../support/e2e-env.js';
import { startOwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';
import { archived, cleanUpAfterEach, dropLabel, keepOwnRedis, STALL_MS, stalledNotifications, start } from '../support/watchdog-run.js';

cleanUpAfterEach();

describe('the watchdog: what is not a stall', () => {
  it('a slow API, a 401 pause and a 429 storm held past the bound are not stalls', async () => {
    const run = await start('', { sandbox: { faults: { latencyMs: STALL_MS + 2000 } } });
    const slow = await Promise.all([dropLabel(run.env), dropLabel(run.env)]);
    await waitFor(async () => (await archived(run.env)).length === 2, { timeoutMs: 30_000, what: 'the slow API answered' });
    expect((await archived(run.env)).sort()).toEqual(slow.sort());
    // 401 for twice the bound: the queues pause (/readyz says so), nothing is a stall.
    run.env.sandbox.setFaults({ latencyMs: 0, unauthorizedUntil: Date.now() + 2 * STALL_MS });
    const paused = await dropLabel(run.env);
    await run.daemon.waitForLog((l) => /401/.test(String(l.msg)) || /paus/.test(String(l.msg)), { timeoutMs: 15_000, what: 'the 401 pause' });
    await waitFor(async () => (await archived(run.env)).includes(paused), { timeoutMs: 60_000, what: 'the label sent after the 401 window' });
    // A 429 storm for twice the bound: the limiter holds items back.
    run.env.sandbox.setFaults({ rateLimitStormUntil: Date.now() + 2 * STALL_MS, stormRetryAfterSec: 1 });
    const stormed = await dropLabel(run.env);
    await waitFor(async () => (await archived(run.env)).includes(stormed), { timeoutMs: 60_000, what: 'the label sent after the storm' });
    expect(run.daemon.logs().filter((l) => String(l.msg).startsWith('stalled:'))).toEqual([]);
    expect(run.readyReasons.filter((reason) => reason.startsWith('stalled:'))).toEqual([]);
    expect(stalledNotifications(run.hook)).toEqual([]);
  });

  it('a Redis outage longer than the bound, with work in flight, is not a stall', async () => {
    const ownRedis = keepOwnRedis(await startOwnRedis());
    const run = await start('', { sandbox: { faults: { latencyMs: 500 } }, env: { REDIS_URL: ownRedis.url } });
    const records = Array.from({ length: 20 }, (_, i) =>
      JSON.stringify({ delivery_id: randomUUID(), event_at: new Date(Date.UTC(2026, 2, 1, 10, 0, i)).toISOString() }),
    );
    await dropFile(join(run.env.spool, 'events'), 'coletas.ndjson', `${records.join('\n')}\n`);
    const labels = await Promise.all([dropLabel(run.env), dropLabel(run.env), dropLabel(run.env)]);
    await waitFor(() => run.env.sandbox.requests().length >= 2, { timeoutMs: 20_000, what: 'the workers sending' });
    await ownRedis.stop();
    await run.daemon.waitForLog((l) => String(l.msg).startsWith('Redis unreachable'), { timeoutMs: 15_000, what: 'the outage line' });
    const stoppedAt = Date.now();
    // The outage itself: lasting past the bound (twice it) is what the test is about, not a synchronisation.
    await new Promise((resolve) => setTimeout(resolve, 2 * STALL_MS + 1000 - (Date.now() - stoppedAt)));
    await ownRedis.start();
    await waitFor(async () => (await archived(run.env)).length === labels.length + 1, { timeoutMs: 60_000, what: 'every file archived after the outage' });
    await run.daemon.waitForLog((l) => String(l.msg).startsWith('Redis reachable again'), { what: 'the back line' });
    expect(run.daemon.logs().filter((l) => String(l.msg).startsWith('stalled:'))).toEqual([]);
    expect(run.readyReasons.filter((reason) => reason.startsWith('stalled:'))).toEqual([]);
    expect(run.readyReasons.some((reason) => reason.startsWith('redis is not answering'))).toBe(true);
    expect(stalledNotifications(run.hook)).toEqual([]);
  });
});
