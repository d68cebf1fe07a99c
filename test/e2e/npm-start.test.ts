/**
 * `npm start` and the terminal (issue 35): npm runs the script through `sh -c`; the script `exec`s
 * node, so the daemon is npm's own child and gets what npm forwards. A SIGTERM to npm's process
 * stops the daemon cleanly, and the managed redis-server with it; closing the terminal (SIGHUP to
 * the whole process group, as the terminal sends it) is a clean stop too, also once the daemon's
 * stderr is gone with the terminal (its writes fail: before, an uncaught EPIPE/EIO ended it with
 * exit 1 and left the managed redis-server running). `npm start` runs in the repository
 * (npm needs its package.json), with the spool and the managed Redis's data in a folder of its own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { endRedisServers, isAlive, managedRedisPidIn } from '../support/managed-redis.js';
import { spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const ROOT = new URL('../..', import.meta.url).pathname;

let dir: string | undefined;
const groups = new Set<number>();
const redisPids = new Set<number>();

afterEach(async () => {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
  await endRedisServers(redisPids);
  redisPids.clear();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** `npm start` in the repository, in a process group of its own, up and running. */
async function npmStart(): Promise<{ npm: DaemonProcess; daemonPid: number; redisPid: number }> {
  dir = await mkdtemp(join(tmpdir(), 'cs-npm-start-'));
  const env = { CARRIER_SYNC_HTTP_PORT: '0', CARRIER_SYNC_SPOOL_DIR: join(dir, 'spool'), CARRIER_SYNC_REDIS_DIR: join(dir, 'redis'), LOG_LEVEL: 'info' };
  const npm = spawnDaemon(env, { file: 'npm', args: ['start', '--silent'], cwd: ROOT, isOwnGroup: true });
  groups.add(npm.child.pid!);
  await waitUntilStarted(npm, 30_000);
  const daemonPid = Number(npm.logs().find((line) => line.msg === 'carrier-sync started')?.['pid']);
  const redisPid = await managedRedisPidIn(join(dir, 'redis'));
  expect(redisPid).not.toBeNull();
  redisPids.add(redisPid!);
  return { npm, daemonPid, redisPid: redisPid! };
}

async function expectStoppedCleanly(npm: DaemonProcess, daemonPid: number, redisPid: number): Promise<void> {
  await npm.exited;
  await waitFor(() => !isAlive(daemonPid), { timeoutMs: 15_000, what: 'the daemon to be gone' });
  await waitFor(() => !isAlive(redisPid), { timeoutMs: 15_000, what: 'the managed redis-server to be gone' });
  const messages = npm.logs().map((line) => line.msg);
  expect(messages, npm.tail()).toContain('shut down cleanly');
  expect(messages).toContain('stopped the managed redis-server');
}

describe('npm start', () => {
  it('a SIGTERM to npm’s process stops the daemon cleanly, and the managed redis-server with it', { timeout: 60_000 }, async () => {
    const { npm, daemonPid, redisPid } = await npmStart();
    expect(daemonPid, 'the daemon is npm’s own child (exec), not a shell’s').not.toBe(npm.child.pid);
    npm.kill('SIGTERM');
    await expectStoppedCleanly(npm, daemonPid, redisPid);
  });

  it('closing the terminal (SIGHUP to the process group) is a clean stop', { timeout: 60_000 }, async () => {
    const { npm, daemonPid, redisPid } = await npmStart();
    process.kill(-npm.child.pid!, 'SIGHUP');
    await expectStoppedCleanly(npm, daemonPid, redisPid);
    expect(npm.logs().find((line) => line.msg === 'signal received')?.['signal']).toBe('SIGHUP');
  });
});

describe('a closed terminal', () => {
  it(
    'stderr gone (the terminal closed) does not cut the clean stop short: SIGHUP still exits 0 and stops the managed redis-server',
    { timeout: 60_000 },
    async () => {
      dir = await mkdtemp(join(tmpdir(), 'cs-closed-terminal-'));
      const env = { CARRIER_SYNC_HTTP_PORT: '0', CARRIER_SYNC_SPOOL_DIR: join(dir, 'spool'), CARRIER_SYNC_REDIS_DIR: join(dir, 'redis'), LOG_LEVEL: 'info' };
      const daemon = spawnDaemon(env, { cwd: dir });
      await waitUntilStarted(daemon, 30_000);
      const redisPid = await managedRedisPidIn(join(dir, 'redis'));
      redisPids.add(redisPid!);
      // What a closed terminal does to the daemon's writes: they fail (EPIPE here, EIO on a tty).
      daemon.child.stderr!.destroy();
      daemon.kill('SIGHUP');
      expect(await daemon.exited).toEqual({ code: 0, signal: null });
      await waitFor(() => !isAlive(redisPid!), { timeoutMs: 15_000, what: 'the managed redis-server to be gone' });
    },
  );
});
