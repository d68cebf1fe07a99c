/**
 * For tests that run the binary without REDIS_URL, so that it uses a managed redis-server under
 * `<cwd>/var/redis`: find that server's pid, and end the servers a test caused, by pid.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { isProcessRunning } from '../../src/process-running.js';
import { waitFor } from './wait.js';

/** The managed redis-server's folder for a process run in `cwd` with the default settings. */
export const managedDirOf = (cwd: string): string => join(cwd, 'var', 'redis');

/** The pid of the redis-server answering on the port written in `<dir>/port`, or null when none answers. */
export async function managedRedisPidIn(dir: string): Promise<number | null> {
  const port = Number((await readFile(join(dir, 'port'), 'utf8').catch(() => '')).trim());
  if (!(port > 0)) return null;
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const match = /^process_id:(\d+)/m.exec(await redis.info('server'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

/** Whether a process of this host runs under `pid` (the daemon's own check). */
export const isAlive = isProcessRunning;

/** SIGTERMs each pid still alive (only redis-servers the test itself caused) and waits until they are gone. */
export async function endRedisServers(pids: Iterable<number>): Promise<void> {
  const alive = [...new Set(pids)].filter(isAlive);
  for (const pid of alive) process.kill(pid, 'SIGTERM');
  await waitFor(() => alive.every((pid) => !isAlive(pid)), { timeoutMs: 15_000, what: `redis-server ${alive.join(', ')} to exit` });
}
