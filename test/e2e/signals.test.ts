/**
 * SIGTERM / SIGINT on the built daemon: stop taking files, finish what is in flight within the
 * grace period, exit 0; a second signal exits at once. (INTERFACE.md "Signals".)
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, waitForRequestStarted, type E2eEnv, type E2eEnvOptions } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const GRACE_MS = 6000;

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

async function startDaemon(env: E2eEnv): Promise<DaemonProcess> {
  const daemon = spawnDaemon(env.env, { args: env.args('start') });
  await waitUntilStarted(daemon);
  return daemon;
}

/** `labels/<name>` for every archived label (the date folder left out). */
async function archivedLabels(env: E2eEnv): Promise<string[]> {
  return (await listFiles(join(env.spool, 'archive', 'labels'))).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, ''));
}

function expectNoSecretIn(daemon: DaemonProcess, env: E2eEnv): void {
  expect([...daemon.stderrLines, ...daemon.stdoutLines].join('\n')).not.toContain(env.carrierKey);
}

describe('signals', () => {
  it('SIGTERM after work is done exits 0 within the grace period and logs "shut down cleanly"', async () => {
    const env = await setUp();
    const daemon = await startDaemon(env);
    const names = await Promise.all(
      [1, 2, 3].map(async (n) => {
        const name = `${randomUUID()}.pdf`;
        await dropFile(join(env.spool, 'labels'), name, await makePdf(`label ${n}`));
        return name;
      }),
    );
    await waitFor(async () => (await archivedLabels(env)).length === 3, { what: '3 archived labels' });
    expect(await archivedLabels(env)).toEqual([...names].sort());

    const signalledAt = Date.now();
    daemon.kill('SIGTERM');
    const exit = await daemon.exited;
    expect(exit, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);
    const messages = daemon.logs().map((line) => line.msg);
    expect(messages).toContain('signal received');
    expect(messages).toContain('shut down cleanly');
    expect(
      daemon.logs().filter((line) => (line.level ?? 0) >= 50),
      'error lines',
    ).toEqual([]);
    expectNoSecretIn(daemon, env);
  });

  it('SIGTERM while a slow request is in flight lets it finish, archives its file, then exits 0', async () => {
    const env = await setUp({ sandbox: { faults: { latencyMs: 1500 } } });
    const daemon = await startDaemon(env);
    const name = `${randomUUID()}.pdf`;
    await dropFile(join(env.spool, 'labels'), name, await makePdf('slow'));
    await waitForRequestStarted(env);

    const signalledAt = Date.now();
    daemon.kill('SIGTERM');
    const exit = await daemon.exited;
    expect(exit, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);

    const [request, ...more] = env.sandbox.requests().filter((r) => r.endpoint === 'label');
    expect(more).toEqual([]);
    expect(request?.status).toBe(200);
    // The answer came after the signal: the request was still in flight when it arrived.
    expect(request!.at + request!.durationMs).toBeGreaterThanOrEqual(signalledAt);
    expect(await archivedLabels(env)).toEqual([name]);
    expect(await listFiles(join(env.spool, '.inflight'))).toEqual([]);
    expect(daemon.logs().map((line) => line.msg)).toContain('shut down cleanly');
    expectNoSecretIn(daemon, env);
  });

  it('a second signal exits at once; the item left in flight is sent after a restart', async () => {
    const env = await setUp({ sandbox: { faults: { latencyMs: 20_000 } } });
    const daemon = await startDaemon(env);
    const name = `${randomUUID()}.pdf`;
    await dropFile(join(env.spool, 'labels'), name, await makePdf('stuck'));
    await waitForRequestStarted(env);

    daemon.kill('SIGTERM');
    await daemon.waitForLog((line) => line.msg === 'signal received', { what: 'the first signal to be handled' });
    const secondAt = Date.now();
    daemon.kill('SIGINT');
    const exit = await daemon.exited;
    expect(Date.now() - secondAt).toBeLessThan(2000);
    expect(exit.code === 0 && exit.signal === null, JSON.stringify(exit)).toBe(false);
    expect(daemon.logs().map((line) => line.msg)).not.toContain('shut down cleanly');
    expectNoSecretIn(daemon, env);

    // Nothing was lost: the file is still in flight, and a new daemon sends and archives it.
    expect(await listFiles(join(env.spool, '.inflight', 'labels'))).toHaveLength(1);
    env.sandbox.setFaults({ latencyMs: 0 });
    const again = await startDaemon(env);
    await waitFor(async () => (await archivedLabels(env)).length === 1, { what: 'the label to be archived after restart' });
    expect(await archivedLabels(env)).toEqual([name]);
    expect(env.sandbox.state.deliveries.get(name.replace('.pdf', ''))?.label).toBeTruthy();
    again.kill('SIGTERM');
    expect(await again.exited).toEqual({ code: 0, signal: null });
  });
});
