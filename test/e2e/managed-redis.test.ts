/**
 * The managed redis-server's lifecycle (README, "The two commands"): with REDIS_URL unset the
 * binary runs its own under `./var/redis`; a clean stop stops it; a `kill -9` leaves it and the next
 * start reuses it; back on another port with its data it is not a failover; CLI commands start it
 * on demand and stop it when done, unless someone else (a running daemon) still uses it. Each run has its own temporary working folder, and every
 * redis-server a test caused is ended by its pid afterwards, whatever the outcome.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { endRedisServers, isAlive, managedDirOf, managedRedisPidIn } from '../support/managed-redis.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { makePdf } from '../support/builders.js';
import { dropFile, listFiles } from '../support/e2e-env.js';

const ENV = { CARRIER_SYNC_HTTP_PORT: '0', LOG_LEVEL: 'info' };
const STARTED = 'started a managed redis-server (REDIS_URL is not set)';
const REUSED = 'using the managed redis-server already running (REDIS_URL is not set)';

const dirs: string[] = [];
const redisPids = new Set<number>();

afterEach(async () => {
  await killAllDaemons();
  await endRedisServers(redisPids);
  redisPids.clear();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function workDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-managed-'));
  dirs.push(dir);
  return dir;
}

/** The pid of the redis-server answering for `dir`, remembered for the clean-up. */
async function redisPidOf(dir: string): Promise<number> {
  const pid = await managedRedisPidIn(managedDirOf(dir));
  expect(pid, 'a managed redis-server answers').not.toBeNull();
  redisPids.add(pid!);
  return pid!;
}

async function startIn(dir: string): Promise<DaemonProcess> {
  const daemon = spawnDaemon(ENV, { cwd: dir });
  await waitUntilStarted(daemon, 30_000);
  return daemon;
}

async function gone(pid: number): Promise<void> {
  await waitFor(() => !isAlive(pid), { timeoutMs: 15_000, what: `redis-server ${pid} to be gone` });
}
const messagesOf = (lines: readonly LogLine[]): unknown[] => lines.map((line) => line.msg);

describe('the managed redis-server', () => {
  it('a SIGINT to `start` stops the redis-server it started, and says so', async () => {
    const dir = await workDir();
    const daemon = await startIn(dir);
    const pid = await redisPidOf(dir);
    const started = daemon.logs().find((line) => line.msg === STARTED);
    expect(started?.['redisPid']).toBe(pid);

    daemon.kill('SIGINT');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    await gone(pid);
    const messages = messagesOf(daemon.logs());
    expect(messages).toContain('stopped the managed redis-server');
    expect(messages.indexOf('stopped the managed redis-server'), messages.join('\n')).toBeLessThan(messages.indexOf('shut down cleanly'));
  });

  it('a kill -9 leaves it running; the next start reuses it, and its clean stop stops it', async () => {
    const dir = await workDir();
    const first = await startIn(dir);
    const pid = await redisPidOf(dir);
    first.kill('SIGKILL');
    await first.exited;
    expect(isAlive(pid)).toBe(true);

    const second = await startIn(dir);
    expect(await redisPidOf(dir)).toBe(pid);
    expect(messagesOf(second.logs())).toContain(REUSED);
    expect(messagesOf(second.logs())).not.toContain(STARTED);
    second.kill('SIGTERM');
    expect(await second.exited, second.tail()).toEqual({ code: 0, signal: null });
    await gone(pid);
  });

  it('back on another port with the same data after a clean stop: not a failover (status says none)', async () => {
    const dir = await workDir();
    const first = await startIn(dir);
    const firstPort = first.logs().find((line) => line.msg === STARTED)?.['port'];
    const firstPid = await redisPidOf(dir);
    first.kill('SIGINT');
    expect(await first.exited, first.tail()).toEqual({ code: 0, signal: null });
    await gone(firstPid);

    const second = await startIn(dir);
    await redisPidOf(dir);
    const secondPort = second.logs().find((line) => line.msg === STARTED)?.['port'];
    expect(secondPort, 'a free port picked again').not.toBe(firstPort);
    const result = await runCli(['status'], { env: ENV, cwd: dir, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^redis: single, primary 127\.0\.0\.1:\d+; no replicas; no failover seen$/m);
    second.kill('SIGINT');
    expect(await second.exited, second.tail()).toEqual({ code: 0, signal: null });
  });

  it('one that exits under a running daemon (kill -9, as the OOM killer does) is started again on its port with its data; files go on', async () => {
    const dir = await workDir();
    const daemon = await startIn(dir);
    const firstPid = await redisPidOf(dir);
    const port = daemon.logs().find((line) => line.msg === STARTED)?.['port'];
    const archived = async (): Promise<string[]> => (await listFiles(join(dir, 'spool', 'archive', 'labels'))).map((path) => path.split('/').at(-1)!);
    const before = `${randomUUID()}.pdf`;
    await dropFile(join(dir, 'spool', 'labels'), before, await makePdf(before));
    await waitFor(async () => (await archived()).includes(before), { timeoutMs: 20_000, what: 'a label archived before' });

    process.kill(firstPid, 'SIGKILL');
    const back = await daemon.waitForLog((line) => line.msg === 'started the managed redis-server again', {
      timeoutMs: 20_000,
      what: 'the server started again',
    });
    expect(back['port']).toBe(port);
    expect(await redisPidOf(dir)).not.toBe(firstPid);
    expect(daemon.logs().filter((line) => line.msg === 'the managed redis-server exited: starting it again on its port with its data')).toHaveLength(1);

    const after = `${randomUUID()}.pdf`;
    await dropFile(join(dir, 'spool', 'labels'), after, await makePdf(after));
    await waitFor(async () => (await archived()).includes(after), { timeoutMs: 30_000, what: 'a label archived after' }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${daemon.tail(40)}`);
    });
    // Its data came back with it: the first label's journey is there.
    const history = await runCli(['history', before.replace('.pdf', '')], { env: ENV, cwd: dir, timeoutMs: 30_000 });
    expect(history.stdout).toContain('accepted by the API');
    daemon.kill('SIGINT');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(messagesOf(daemon.logs())).toContain('stopped the managed redis-server');
  });

  it('a CLI command starts it on demand and stops it when done', async () => {
    const dir = await workDir();
    const result = await runCli(['status', '--json'], { env: ENV, cwd: dir, timeoutMs: 30_000 });
    const lines = result.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
    const pid = lines.find((line) => line.msg === STARTED)?.['redisPid'];
    expect(typeof pid, result.stderr).toBe('number');
    redisPids.add(pid as number);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as { queues: Record<string, unknown> }).queues).toHaveProperty('label');
    await gone(pid as number);
  });

  it('a CLI command leaves the redis-server of a running daemon alone', async () => {
    const dir = await workDir();
    const daemon = await startIn(dir);
    const pid = await redisPidOf(dir);
    const result = await runCli(['status'], { env: ENV, cwd: dir, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('left the managed redis-server running: other clients use it');
    expect(isAlive(pid)).toBe(true);
    expect(await managedRedisPidIn(managedDirOf(dir))).toBe(pid);

    daemon.kill('SIGINT');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    await gone(pid);
  });

  it('without a redis-server on the machine (as in the image), one line says Redis must be given, and nothing is written', async () => {
    const dir = await workDir();
    const emptyPath = await workDir();
    for (const command of [['status'], ['start']]) {
      const result = await runCli(command, { env: { ...ENV, PATH: emptyPath }, cwd: dir });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n'), 'one line').toEqual([
        'carrier-sync: REDIS_URL is not set and there is no redis-server on this machine to run one: give carrier-sync its Redis with REDIS_URL (or CARRIER_SYNC_REDIS_SENTINELS)',
      ]);
      expect(result.stderr, 'the data folder is not tried').not.toContain('EACCES');
      expect(await readdir(dir), 'nothing written in the working folder').toEqual([]);
    }
  });

  it('a second start in the same folder: one line naming the first (its pid) and CARRIER_SYNC_HTTP_PORT; the first and its redis-server go on (issue 45)', async () => {
    const dir = await workDir();
    const first = await startIn(dir);
    const pid = await redisPidOf(dir);
    const port = new URL(String(first.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl'])).port;
    for (const [lang, holder] of [
      ['en', `another carrier-sync (process ${first.child.pid})`],
      ['pt-BR', `outro carrier-sync (processo ${first.child.pid})`],
    ] as const) {
      const second = await runCli(['start'], { env: { ...ENV, CARRIER_SYNC_HTTP_PORT: port, CARRIER_SYNC_LANG: lang }, cwd: dir, timeoutMs: 30_000 });
      expect(second.code, second.stderr).toBe(2);
      const lines = second.stderr.trim().split('\n');
      expect(lines, 'one line').toHaveLength(1);
      expect(lines[0]).toContain(`127.0.0.1:${port}`);
      expect(lines[0]).toContain(holder);
      expect(lines[0]).toContain('CARRIER_SYNC_HTTP_PORT');
      expect(second.stderr).not.toContain('EADDRINUSE');
    }
    expect(isAlive(pid), 'the first one’s redis-server still runs').toBe(true);
    expect(first.isRunning()).toBe(true);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    first.kill('SIGINT');
    expect(await first.exited, first.tail()).toEqual({ code: 0, signal: null });
    await gone(pid);
  });
});
