/**
 * The watcher's window (issue 23): an inbox holding more files than `spool.inboxWindow` (4 here).
 * With one item queued at a time (delivery.maxQueued 1, concurrency 1) a file is claimed only once
 * the one before it was sent, so the API's request order is the claim order. Checked:
 *  - every file ends exactly once under archive/, nothing left in the inbox or in flight, one
 *    request per file;
 *  - the order: files found by a listing (there before the start, or waiting beyond the window) go
 *    oldest mtime first, whatever their names; files dropped one after another go in drop order;
 *  - the watcher never tracked more than the window (the back-pressure lines' `waitingInInbox`).
 * The periodic rescan is a minute away: the window is refilled by the listing its draining starts.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const WINDOW = 4;
const FILES = 30;

let t: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await t?.close();
  t = undefined;
});

async function windowEnv(usePolling: boolean): Promise<E2eEnv> {
  return (t = await createE2eEnv({
    sandbox: { autoCreateDeliveries: true },
    settings: {
      spool: { inboxWindow: WINDOW, rescanIntervalMs: 60_000, ...(usePolling ? { usePolling: true, pollIntervalMs: 100 } : {}) },
      delivery: { maxQueued: 1, concurrency: 1 },
    },
  }));
}

/** Drops `<id>.pdf` with mtime `mtimeSec`, set before it is renamed into the inbox (no change after it appears). */
async function dropWithMtime(env: E2eEnv, id: string, pdf: Buffer, mtimeSec: number): Promise<void> {
  const inbox = join(env.spool, 'labels');
  await mkdir(inbox, { recursive: true });
  await writeFile(join(inbox, `${id}.pdf.tmp`), pdf);
  await utimes(join(inbox, `${id}.pdf.tmp`), mtimeSec, mtimeSec);
  await rename(join(inbox, `${id}.pdf.tmp`), join(inbox, `${id}.pdf`));
}

async function startDaemon(env: E2eEnv): Promise<DaemonProcess> {
  const daemon = spawnDaemon(env.env, { args: env.args('start') });
  await waitUntilStarted(daemon);
  return daemon;
}

/** Waits until every file is archived, stops the daemon, and checks the spool and the requests; returns the delivery ids in send order. */
async function settleAndCheck(env: E2eEnv, daemon: DaemonProcess, ids: string[]): Promise<string[]> {
  await waitFor(
    async () => (await listFiles(join(env.spool, 'archive'))).length >= ids.length && (await listFiles(join(env.spool, '.inflight'))).length === 0,
    {
      what: `all ${ids.length} files archived`,
      timeoutMs: 60_000,
    },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}; left in the inbox: ${(await readdir(join(env.spool, 'labels'))).length}\n${daemon.tail(30)}`);
  });
  daemon.kill('SIGTERM');
  expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
  const archived = (await listFiles(join(env.spool, 'archive', 'labels'))).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, ''));
  expect(archived.sort()).toEqual(ids.map((id) => `${id}.pdf`).sort());
  expect(await listFiles(join(env.spool, 'failed'))).toEqual([]);
  expect(await listFiles(join(env.spool, 'labels'))).toEqual([]);
  const sent = env.sandbox.requests().filter((r) => r.endpoint === 'label');
  expect(sent.filter((r) => r.status !== 200).map((r) => `${r.deliveryId} ${r.status}`)).toEqual([]);
  const tracked = daemon.logs().filter((line) => line.msg?.startsWith('back-pressure: queue full') === true && line['kind'] === 'labels');
  expect(tracked.length, 'back-pressure engaged').toBeGreaterThan(0);
  expect(Math.max(...tracked.map((line) => Number(line['waitingInInbox']))), 'files tracked at once').toBeLessThanOrEqual(WINDOW);
  return sent.map((r) => r.deliveryId ?? '');
}

describe.each([
  { how: 'inotify', usePolling: false },
  { how: 'polling (a network share)', usePolling: true },
])('the inbox window, $how', ({ usePolling }) => {
  it('files there before the start: each sent and archived once, oldest mtime first, whatever their names', async () => {
    const env = await windowEnv(usePolling);
    // Each request answered after 200 ms, so the one queued item is still there when the next claim
    // pass looks and back-pressure engages however fast the machine is (on a loaded one a pass could
    // start only after the item was already sent: 1 failure in a fresh-clone check).
    env.sandbox.setFaults({ latencyMs: 200 });
    const pdf = await makePdf('window');
    const ids = Array.from({ length: FILES }, () => randomUUID());
    // Names in random order; mtimes a second apart in the order of `ids` (oldest first).
    const base = Math.floor(Date.now() / 1000) - 3600;
    for (const [i, id] of ids.entries()) await dropWithMtime(env, id, pdf, base + i);
    const daemon = await startDaemon(env);
    expect(await settleAndCheck(env, daemon, ids)).toEqual(ids);
  });

  it('files dropped one after another past the window: each sent and archived once, in drop order', async () => {
    const env = await windowEnv(usePolling);
    // Each request answered after 200 ms: the drops outrun the daemon, so the queue fills and the
    // window is what holds the rest back (on a loaded machine the drops alone came too slowly).
    env.sandbox.setFaults({ latencyMs: 200 });
    const daemon = await startDaemon(env);
    const pdf = await makePdf('window');
    const ids = Array.from({ length: FILES }, () => randomUUID());
    // A strictly later mtime for each drop, as a producer writing one after another gets.
    const base = Math.floor(Date.now() / 1000) - 60;
    for (const [i, id] of ids.entries()) await dropWithMtime(env, id, pdf, base + i);
    expect(await settleAndCheck(env, daemon, ids)).toEqual(ids);
  });
});
