/**
 * The delivery on a thread of its own (runtime/delivery-thread/delivery-thread.ts), with the built daemon: the
 * default `start` (watcher and worker roles in one process, 2 cores or more) runs the worker role
 * on a worker thread; labels, CT-e and events files settle; the thread's lines come out on the one
 * stderr (tagged `thread: delivery`) and its requests show in `/metrics`; a stop while a request
 * is in flight lets the thread finish it; `CARRIER_SYNC_DELIVERY_THREAD=off` keeps one thread.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, waitForRequestStarted, type E2eEnv, type E2eEnvOptions } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const GRACE_MS = 6000;
const THREADED = 'delivery runs on its own thread';
/** delivery.threadNice's default (config/default.yaml). */
const DEFAULT_NICE = 5;
/** The default is `auto` (on with 2 cores or more): on a 1-core machine the test asks for the thread. */
const DEFAULT_ENV: Record<string, string> = availableParallelism() >= 2 ? {} : { CARRIER_SYNC_DELIVERY_THREAD: 'on' };

let t: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await t?.close();
  t = undefined;
});

async function setUp(options: E2eEnvOptions = {}): Promise<E2eEnv> {
  t = await createE2eEnv({ ...options, sandbox: { autoCreateDeliveries: true, ...options.sandbox }, settings: { shutdown: { graceMs: GRACE_MS } } });
  return t;
}

async function startDaemon(env: E2eEnv, extra: Record<string, string> = DEFAULT_ENV): Promise<DaemonProcess> {
  const daemon = spawnDaemon({ ...env.env, ...extra }, { args: env.args('start') });
  await waitUntilStarted(daemon);
  return daemon;
}

/** `<kind>/<name>` of every archived file (the date folder left out). */
async function archived(env: E2eEnv): Promise<string[]> {
  return (await listFiles(join(env.spool, 'archive'))).map((path) => path.replace(/\/\d{4}-\d{2}-\d{2}\//, '/')).sort();
}

/** The nice value of each of a process's threads, by thread id (/proc/<pid>/task/<tid>/stat, field 19). */
async function threadNices(pid: number): Promise<Map<number, number>> {
  const nices = new Map<number, number>();
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
    // The fields after the command's closing parenthesis start at field 3: nice is the 17th of them.
    if (stat !== null) nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return nices;
}

async function dropOneOfEach(env: E2eEnv): Promise<string[]> {
  const label = `${randomUUID()}.pdf`;
  const cte = `${randomUUID()}.xml`;
  const good = env.sandbox.state.addDelivery().id;
  await dropFile(join(env.spool, 'labels'), label, await makePdf('threaded'));
  await dropFile(join(env.spool, 'cte'), cte, makeCteXml());
  const events = [JSON.stringify({ delivery_id: good, event_at: '2026-03-01T10:00:00-03:00' })];
  await dropFile(join(env.spool, 'events'), 'coletas.ndjson', `${events.join('\n')}\n`);
  return [`cte/${cte}`, 'events/coletas.ndjson', `labels/${label}`].sort();
}

describe('the delivery thread', () => {
  it('the default daemon sends from a thread of its own: labels, CT-e and events settle, its lines and metrics reach the main thread', async () => {
    const env = await setUp();
    const daemon = await startDaemon(env);
    const messages = (): string[] => daemon.logs().map((line) => String(line.msg));
    expect(messages()).toContain(THREADED);
    // Its start's lines come before the main thread says it runs, then 'carrier-sync started'.
    expect(messages().indexOf('workers started')).toBeLessThan(messages().indexOf(THREADED));
    expect(messages().indexOf(THREADED)).toBeLessThan(messages().indexOf('carrier-sync started'));
    expect(daemon.logs().find((line) => line.msg === 'workers started')?.['thread']).toBe('delivery');
    // The delivery thread runs delivery.threadNice steps below the main thread; every other thread keeps its priority.
    const pid = daemon.child.pid ?? -1;
    const nices = await threadNices(pid);
    expect(nices.get(pid), 'the main thread').toBe(0);
    expect([...nices.values()].filter((nice) => nice === DEFAULT_NICE)).toHaveLength(1);

    const expected = await dropOneOfEach(env);
    await waitFor(async () => (await archived(env)).length === 3, { what: 'the label, the CT-e and the events file archived', timeoutMs: 30_000 });
    expect(await archived(env)).toEqual(expected);
    expect(env.sandbox.requests().map((request) => request.endpoint)).toEqual(expect.arrayContaining(['label', 'cte', 'collecting']));
    // The thread's lines reach the main thread within 50 ms of being logged: waited for, not assumed.
    const sent = await waitFor(
      () => {
        const lines = daemon.logs().filter((line) => line.msg === 'item sent');
        return lines.length >= 3 ? lines : undefined;
      },
      { what: "the thread's three 'item sent' lines" },
    );
    expect(sent.every((line) => line['thread'] === 'delivery')).toBe(true);

    // The thread's request samples reach the http role's metrics (batched, once a second).
    const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
    await waitFor(
      async () => {
        const text = await (await fetch(`${opsUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
        return /carrier_sync_api_request_seconds_count\{endpoint="label",status="200"\} 1/.test(text);
      },
      { what: "the thread's label request in /metrics" },
    );

    daemon.kill('SIGTERM');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(messages().at(-1)).toBe('shut down cleanly');
    expect(
      daemon.logs().filter((line) => (line.level ?? 0) >= 50),
      'error lines',
    ).toEqual([]);
    expect([...daemon.stderrLines, ...daemon.stdoutLines].join('\n')).not.toContain(env.carrierKey);
  });

  it('SIGTERM while the thread has a slow request in flight: the request finishes, the file is archived, exit 0', async () => {
    const env = await setUp({ sandbox: { faults: { latencyMs: 1500 } } });
    const daemon = await startDaemon(env);
    const name = `${randomUUID()}.pdf`;
    await dropFile(join(env.spool, 'labels'), name, await makePdf('slow'));
    await waitForRequestStarted(env);

    const signalledAt = Date.now();
    daemon.kill('SIGTERM');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);
    const [request, ...more] = env.sandbox.requests().filter((r) => r.endpoint === 'label');
    expect(more).toEqual([]);
    expect(request?.status).toBe(200);
    expect(await archived(env)).toEqual([`labels/${name}`]);
    expect(await listFiles(join(env.spool, '.inflight'))).toEqual([]);
    expect(daemon.logs().map((line) => line.msg)).toContain('shut down cleanly');
  });

  it('CARRIER_SYNC_DELIVERY_THREAD=off: one thread sends, as before', async () => {
    const env = await setUp();
    const daemon = await startDaemon(env, { CARRIER_SYNC_DELIVERY_THREAD: 'off' });
    const expected = await dropOneOfEach(env);
    await waitFor(async () => (await archived(env)).length === 3, { what: 'the three files archived', timeoutMs: 30_000 });
    expect(await archived(env)).toEqual(expected);
    expect(daemon.logs().map((line) => line.msg)).not.toContain(THREADED);
    expect(daemon.logs().some((line) => line['thread'] !== undefined)).toBe(false);
    daemon.kill('SIGTERM');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
  });
});
