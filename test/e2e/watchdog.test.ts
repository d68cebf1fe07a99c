/**
 * The progress watchdog (runtime/watchdog/watchdog.ts) on the built binary, each kind of stall injected with
 * CARRIER_SYNC_FAILPOINTS and a small CARRIER_SYNC_STALL_MS: it is seen within the bound, told once
 * (one error line, `/readyz` 503 `stalled: …`, the `stalled` notification firing then resolved),
 * and recovered (files dropped after the fault are still accepted by the API and archived). A slow
 * API, a 401 pause and a 429 storm held longer than the bound are not stalls.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { startHttpReceiver, type HttpReceiver } from '../support/notify-receivers.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const STALL_MS = 3000;
/** Seen within the bound: the bound, a check's period, and room for a loaded machine. */
const SEEN_WITHIN_MS = STALL_MS + 1000 + 4000;

let t: E2eEnv | undefined;
let receiver: HttpReceiver | undefined;
let poller: { stop(): void } | undefined;
let ownRedis: OwnRedis | undefined;
afterEach(async () => {
  poller?.stop();
  await killAllDaemons();
  await receiver?.close();
  await ownRedis?.close();
  await t?.close();
  t = receiver = poller = ownRedis = undefined;
});

interface Running {
  env: E2eEnv;
  daemon: DaemonProcess;
  opsUrl: string;
  /** Every `/readyz` reason seen, polled every 100 ms from the start. */
  readyReasons: string[];
  /** Every `/healthz` 503 reason seen, polled likewise. */
  unhealthyReasons: string[];
  hook: HttpReceiver;
}

async function start(failpoints: string, options: { sandbox?: SandboxOptions; env?: Record<string, string> } = {}): Promise<Running> {
  t = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, ...options.sandbox }, settings: { shutdown: { graceMs: 5000 } } });
  receiver = await startHttpReceiver();
  const daemon = spawnDaemon(
    {
      ...t.env,
      CARRIER_SYNC_STALL_MS: String(STALL_MS),
      CARRIER_SYNC_FAILPOINTS: failpoints,
      CARRIER_SYNC_DELIVERY_THREAD: 'on',
      CARRIER_SYNC_NOTIFY_WEBHOOK_URL: receiver.url,
      ...options.env,
    },
    { args: t.args('start') },
  );
  await waitUntilStarted(daemon);
  const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
  const readyReasons: string[] = [];
  const unhealthyReasons: string[] = [];
  let isPolling = true;
  const poll = async (path: string, reasons: string[]): Promise<void> => {
    try {
      const response = await fetch(`${opsUrl}${path}`, { signal: AbortSignal.timeout(2000) });
      const body = (await response.json()) as { reason?: string };
      if (response.status === 503 && body.reason !== undefined) reasons.push(body.reason);
    } catch {
      // the daemon is stopping
    }
  };
  void (async () => {
    while (isPolling) {
      await Promise.all([poll('/readyz', readyReasons), poll('/healthz', unhealthyReasons)]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  poller = { stop: () => (isPolling = false) };
  return { env: t, daemon, opsUrl, readyReasons, unhealthyReasons, hook: receiver };
}

async function archived(env: E2eEnv): Promise<string[]> {
  return (await listFiles(join(env.spool, 'archive'))).map((path) => path.replace(/\/\d{4}-\d{2}-\d{2}\//, '/'));
}

async function dropLabel(env: E2eEnv): Promise<string> {
  const name = `${randomUUID()}.pdf`;
  await dropFile(join(env.spool, 'labels'), name, await makePdf(name));
  return `labels/${name}`;
}

const isError = (line: LogLine): boolean => (line.level ?? 0) >= 50 && (line.level ?? 0) < 60;
const stalledNotifications = (hook: HttpReceiver): Array<{ state: string; summary: string; details: Record<string, unknown> }> =>
  hook.received
    .map((d) => d.json as { condition: string; state: string; summary: string; details: Record<string, unknown> })
    .filter((n) => n.condition === 'stalled');

/** The stall was seen in time, told once everywhere, and recovered: a file dropped after it is accepted and archived. */
async function expectToldOnceAndRecovered(run: Running, reasonStart: string, faultAt: number): Promise<void> {
  const { daemon, env, hook } = run;
  const line = await daemon.waitForLog((l) => isError(l) && String(l.msg).startsWith('stalled:'), { timeoutMs: SEEN_WITHIN_MS + 5000, what: 'the stall line' });
  expect(String(line.msg)).toContain(reasonStart);
  expect(Number(line.time) - faultAt).toBeLessThan(SEEN_WITHIN_MS);
  const after = await dropLabel(env);
  await waitFor(async () => (await archived(env)).includes(after), { timeoutMs: 30_000, what: `${after} archived after the recovery` }).catch(
    (error: unknown) => {
      throw new Error(`${String(error)}\n${daemon.tail(60)}`);
    },
  );
  await daemon.waitForLog((l) => l.msg === 'stall recovered', { timeoutMs: 15_000, what: 'stall recovered' });
  await waitFor(() => stalledNotifications(hook).some((n) => n.state === 'resolved'), { timeoutMs: 15_000, what: 'the stalled notification resolved' });
  expect(stalledNotifications(hook).map((n) => n.state)).toEqual(['firing', 'resolved']);
  expect(stalledNotifications(hook)[0]?.details['what']).toEqual(expect.stringContaining(reasonStart));
  expect(run.readyReasons.some((reason) => reason.startsWith(`stalled: ${reasonStart}`) && / since \d{4}-\d\d-\d\dT/.test(reason))).toBe(true);
  await waitFor(async () => (await fetch(`${run.opsUrl}/readyz`)).status === 200, { what: '/readyz 200 again' });
  expect((await fetch(`${run.opsUrl}/healthz`)).status).toBe(200);
  expect(
    daemon
      .logs()
      .filter(isError)
      .map((l) => l.msg),
  ).toEqual([line.msg]);
  expect(daemon.isRunning()).toBe(true);
}

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
    ownRedis = await startOwnRedis();
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
