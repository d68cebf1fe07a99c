/**
 * The progress watchdog (runtime/watchdog/watchdog.ts) on the built binary, each kind of stall injected with
 * CARRIER_SYNC_FAILPOINTS and a small CARRIER_SYNC_STALL_MS: it is seen within the bound, told once
 * (one error line, `/readyz` 503 `stalled: …`, the `stalled` notification firing then resolved),
 * and recovered (files dropped after the fault are still accepted by the API and archived). What is not a
 * stall is in watchdog-not-stalls.test.ts (helpers: test/support/watchdog-run.ts).
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropFile, listFiles } from '../support/e2e-env.js';
import { waitFor } from '../support/wait.js';
import {
  archived,
  cleanUpAfterEach,
  dropLabel,
  expectToldOnceAndRecovered,
  isError,
  SEEN_WITHIN_MS,
  STALL_MS,
  stalledNotifications,
  start,
} from '../support/watchdog-run.js';

cleanUpAfterEach();

describe('the watchdog', () => {
  it('delivery-thread-freeze: the silent thread is seen, told once, and replaced; later files are sent', async () => {
    const run = await start('delivery-thread-freeze');
    expect(run.daemon.logs().filter((l) => l.level === 40 && l['failpoint'] === 'delivery-thread-freeze')).toHaveLength(1);
    const first = await dropLabel(run.env);
    await waitFor(async () => (await archived(run.env)).includes(first), { timeoutMs: 20_000, what: 'the first label archived' });
    const freeze = await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint delivery-thread-freeze:'), { what: 'the freeze' });
    await expectToldOnceAndRecovered(run, 'the delivery thread does not answer', Number(freeze.time));
  });

  it("worker-connection-end: the delivery thread's ended Redis connections are seen and the thread replaced; later files are sent", async () => {
    const run = await start('worker-connection-end');
    const first = await dropLabel(run.env);
    await waitFor(async () => (await archived(run.env)).includes(first), { timeoutMs: 20_000, what: 'the first label archived' });
    const cut = await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint worker-connection-end:'), { what: 'the cut' });
    await expectToldOnceAndRecovered(run, "the delivery thread's Redis connection ended", Number(cut.time));
  });

  it('batch-never-seals: an events file whose batch is not sealed is seen, then read again, sealed and archived', async () => {
    const run = await start('batch-never-seals');
    const deliveries = [randomUUID(), randomUUID()];
    const records = deliveries.map((id, i) => JSON.stringify({ delivery_id: id, event_at: `2026-03-01T10:0${i}:00-03:00` }));
    await dropFile(join(run.env.spool, 'events'), 'coletas.ndjson', `${records.join('\n')}\n`);
    const skipped = await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint batch-never-seals:'), { what: 'the unsealed batch' });
    await expectToldOnceAndRecovered(run, 'the batch of events file coletas.ndjson is not sealed', Number(skipped.time));
    await waitFor(async () => (await archived(run.env)).includes('events/coletas.ndjson'), { timeoutMs: 20_000, what: 'the events file archived' });
    // Each event went once to the API.
    const sent = run.env.sandbox.requests().filter((r) => r.path === '/v1/delivery/collecting' && r.status < 300);
    expect(sent).toHaveLength(2);
  });

  it('check-thread-freeze: a file check thread that stops answering is seen, the threads are ended, the file is claimed again and archived', async () => {
    // Every file on a thread (small ones are checked on the event loop by default).
    const run = await start('check-thread-freeze', { env: { CARRIER_SYNC_CHECK_ON_THREAD_FROM_BYTES: '0' } });
    const first = await dropLabel(run.env);
    const freeze = await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint check-thread-freeze:'), { what: 'the freeze' });
    await expectToldOnceAndRecovered(run, 'a file claim does not finish', Number(freeze.time));
    await waitFor(async () => (await archived(run.env)).includes(first), { timeoutMs: 20_000, what: 'the frozen file archived' });
    expect(run.env.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200)).toHaveLength(2);
  });

  it('job-run-freeze: a run that never ends is seen once it outlasts its own bounds and the bound; the thread is replaced and the label sent', async () => {
    // A run's own bounds: the gate's 15 s before it steps aside, then the request's timeouts (small here).
    const api = { connectTimeoutMs: 500, headersTimeoutMs: 1000, bodyTimeoutMs: 1000 };
    const run = await start('job-run-freeze', { settings: { api } });
    const first = await dropLabel(run.env);
    const freeze = await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint job-run-freeze:'), { what: 'the frozen run' });
    const boundMs = STALL_MS + 15_000 + api.connectTimeoutMs + api.headersTimeoutMs + api.bodyTimeoutMs;
    await expectToldOnceAndRecovered(run, 'a run of job label.', Number(freeze.time), boundMs + 5000);
    // Not before its bound: a slow run is not a stall.
    const line = run.daemon.logs().find((l) => String(l.msg).startsWith('stalled:'));
    expect(Number(line?.time) - Number(freeze.time)).toBeGreaterThanOrEqual(boundMs - 1000);
    await waitFor(async () => (await archived(run.env)).includes(first), { timeoutMs: 20_000, what: 'the frozen run’s label archived' });
    expect(run.env.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200)).toHaveLength(2);
  });

  it('a stall the process cannot recover (its in-flight file taken away by hand): /healthz 503, then exit 1', async () => {
    const run = await start('batch-never-seals');
    const record = JSON.stringify({ delivery_id: randomUUID(), event_at: '2026-03-01T10:00:00-03:00' });
    await dropFile(join(run.env.spool, 'events'), 'coletas.ndjson', `${record}\n`);
    await run.daemon.waitForLog((l) => String(l.msg).startsWith('failpoint batch-never-seals:'), { what: 'the unsealed batch' });
    // Someone takes the in-flight file away by hand: the reconcile cannot read it again, the batch stays unsealed.
    const inflight = join(run.env.spool, '.inflight', 'events');
    for (const name of await listFiles(inflight)) await rm(join(inflight, name));
    const line = await run.daemon.waitForLog((l) => isError(l) && String(l.msg).startsWith('stalled:'), {
      timeoutMs: SEEN_WITHIN_MS + 5000,
      what: 'the stall line',
    });
    const exit = await Promise.race([run.daemon.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 4 * STALL_MS + 15_000))]);
    expect(exit, run.daemon.tail()).toEqual({ code: 1, signal: null });
    expect(run.unhealthyReasons.some((reason) => reason.startsWith('stalled: the batch of events file coletas.ndjson is not sealed'))).toBe(true);
    const fatal = run.daemon.logs().find((l) => l.level === 60);
    expect(String(fatal?.msg)).toContain('not recovered from a stall');
    expect(Number(fatal?.time) - Number(line.time)).toBeGreaterThanOrEqual(STALL_MS - 1000);
    expect(run.daemon.logs().filter((l) => String(l.msg).startsWith('stalled:'))).toHaveLength(1);
    expect(stalledNotifications(run.hook).map((n) => n.state)).toEqual(['firing']);
  });
});
