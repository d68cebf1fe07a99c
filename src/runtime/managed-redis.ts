/**
 * With no REDIS_URL, carrier-sync runs its own redis-server: data (AOF on, fsync every second)
 * under `managedDir`, loopback only, `noeviction`. Its port is written to `<dir>/port`, so a second
 * carrier-sync process or a CLI command on the same machine finds and reuses the running one.
 * It is started detached and left running when carrier-sync exits: a `kill -9` of the daemon
 * leaves Redis and its data in place, and the next start reuses it. Stop it with
 * `redis-cli -p $(cat var/redis/port) shutdown`.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from '../log.js';

export interface ManagedRedis {
  url: string;
  isStartedHere: boolean;
}

export async function ensureManagedRedis(dir: string, port: number, logger: Logger): Promise<ManagedRedis> {
  const dataDir = resolve(dir);
  await mkdir(dataDir, { recursive: true });
  const portFile = join(dataDir, 'port');
  const known = Number((await readFile(portFile, 'utf8').catch(() => '')).trim());
  if (known > 0 && (await answers(known))) return { url: `redis://127.0.0.1:${known}`, isStartedHere: false };

  const chosen = port > 0 ? port : await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port', String(chosen),
      '--bind', '127.0.0.1',
      '--dir', dataDir,
      '--appendonly', 'yes',
      '--appendfsync', 'everysec',
      '--save', '',
      '--maxmemory-policy', 'noeviction',
      '--daemonize', 'no',
      '--logfile', join(dataDir, 'redis.log'),
    ],
    { detached: true, stdio: 'ignore' },
  );
  await new Promise<void>((resolvePromise, reject) => {
    child.once('error', (error) => reject(new Error(`cannot start redis-server (install it, or set REDIS_URL): ${error.message}`)));
    child.once('spawn', () => resolvePromise());
  });
  child.unref();
  const deadline = Date.now() + 15_000;
  while (!(await answers(chosen))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`managed redis-server did not start; see ${join(dataDir, 'redis.log')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await writeFile(portFile, `${chosen}\n`);
  logger.info({ dir: dataDir, port: chosen, redisPid: child.pid }, 'started a managed redis-server (REDIS_URL is not set)');
  return { url: `redis://127.0.0.1:${chosen}`, isStartedHere: true };
}

async function answers(port: number): Promise<boolean> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePromise(address.port) : reject(new Error('no free port'))));
    });
  });
}
