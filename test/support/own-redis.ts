/**
 * A redis-server of a test's own, with AOF on, that the test may stop and start again (the
 * shared test Redis must not be restarted under other test files).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './redis-process.js';

export interface OwnRedis {
  url: string;
  /** Stops Redis (SHUTDOWN: the AOF is flushed) and starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops Redis (SHUTDOWN, and waits for the process to exit): an outage until `start()`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface OwnRedisOptions {
  /** Default `noeviction`, as a deployment should have it. */
  maxmemoryPolicy?: string;
  /** More redis-server arguments, e.g. `['--rename-command', 'CONFIG', '']`. */
  extraArgs?: string[];
  /** False: the port is chosen, the server not started until `start()` (a Redis that comes late). */
  isStartedNow?: boolean;
}

export async function startOwnRedis(options: OwnRedisOptions = {}): Promise<OwnRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--maxmemory-policy',
        options.maxmemoryPolicy ?? 'noeviction',
        ...(options.extraArgs ?? []),
      ],
      {
        stdio: 'ignore',
      },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis({ port, lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') return;
      } catch (error) {
        if (/NOAUTH/.test(String(error))) return; // up, with --requirepass
        if (Date.now() > deadline) throw new Error('own redis-server did not start', { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        probe.disconnect();
      }
    }
  };
  const stop = async (): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    const admin = new Redis({ port, maxRetriesPerRequest: 0 });
    admin.on('error', () => {});
    // SHUTDOWN may be renamed away by extraArgs: a signal then.
    await admin.call('SHUTDOWN').catch(() => undefined);
    if (running.exitCode === null) running.kill('SIGTERM');
    admin.disconnect();
    // A SHUTDOWN can fail (Redis keeps running: seen just after a replica's promotion, its AOF
    // rewrite under way); the server is the test's own, so it is then killed.
    const timer = setTimeout(() => running.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  if (options.isStartedNow !== false) await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    async restart() {
      await stop();
      await start();
    },
    stop,
    start,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
