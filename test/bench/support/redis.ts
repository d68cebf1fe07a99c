/**
 * The Redis a benchmark talks to. REDIS_URL wins when set; otherwise a private redis-server on a
 * free loopback port with nothing on disk (`--save "" --appendonly no`), `noeviction`, and a
 * `--maxmemory` bound so the memory scenario can show Redis stays under it. Each scenario works
 * under its own key prefix and deletes only that prefix afterwards.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitForRedisReady } from '../../support/redis-process.js';
import { Redis } from 'ioredis';

export interface BenchRedis {
  url: string;
  /** 'private' when this run started it, 'CARRIER_SYNC_TEST_REDIS_URL' when it was given (REDIS_URL is never read: it may be production's). */
  origin: 'private' | 'CARRIER_SYNC_TEST_REDIS_URL';
  stop(): Promise<void>;
}

/** The Unix socket each private redis-server of this run also listens on, by its TCP URL. */
const socketsByUrl = new Map<string, string>();

/**
 * BENCH_REDIS_SOCKET=1: daemons reach a private redis-server through its Unix socket (`unix://`)
 * instead of loopback TCP; =this: only this tree's daemons (the URL form is newer than some builds
 * `--compare` runs). The bench's own connections stay on TCP. Default: TCP for every daemon.
 */
function socketWanted(): 'none' | 'all' | 'this' {
  const wanted = process.env['BENCH_REDIS_SOCKET'];
  if (wanted === undefined || wanted === '' || wanted === '0') return 'none';
  return wanted === 'this' ? 'this' : 'all';
}

/** The URL a daemon of `daemonTag` ('this', or the ref under --compare) is given for the bench's Redis at `url`. */
export function daemonRedisUrl(url: string, daemonTag: string): string {
  const socket = socketsByUrl.get(url);
  const wanted = socketWanted();
  if (socket === undefined || wanted === 'none' || (wanted === 'this' && daemonTag !== 'this')) return url;
  return `unix://${socket}`;
}

/** What the report says of how the daemons reach the bench's Redis. */
export function daemonTransport(url: string): string {
  const wanted = socketWanted();
  if (!socketsByUrl.has(url) || wanted === 'none') return 'daemons over loopback TCP';
  return wanted === 'this' ? "this tree's daemons through its Unix socket, others over loopback TCP" : 'daemons through its Unix socket';
}

export async function openBenchRedis(options: { maxmemoryMb?: number } = {}): Promise<BenchRedis> {
  const fromEnv = process.env['CARRIER_SYNC_TEST_REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') return { url: fromEnv, origin: 'CARRIER_SYNC_TEST_REDIS_URL', stop: async () => {} };
  return startPrivateRedis(options.maxmemoryMb ?? 1024);
}

export async function startPrivateRedis(maxmemoryMb: number): Promise<BenchRedis> {
  const port = await freePort();
  // A folder of its own: nothing is saved, but a replica's full sync writes an RDB file (push-replica).
  const dir = await mkdtemp(join(tmpdir(), 'cs-bench-redis-'));
  const args = [
    '--port',
    String(port),
    '--dir',
    dir,
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
    '--maxmemory',
    `${maxmemoryMb}mb`,
    '--unixsocket',
    join(dir, 'redis.sock'),
    '--unixsocketperm',
    '700',
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await waitForRedisReady(child);
  let stopping: Promise<void> | undefined;
  socketsByUrl.set(`redis://127.0.0.1:${port}`, join(dir, 'redis.sock'));
  return {
    url: `redis://127.0.0.1:${port}`,
    origin: 'private',
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => void rm(dir, { recursive: true, force: true }).finally(resolve));
        child.kill('SIGTERM');
      });
      return stopping;
    },
  };
}

export function benchPrefix(scenario: string): string {
  return `cs-bench-${scenario}-${randomBytes(3).toString('hex')}`;
}

/** Deletes every key under `prefix` (and only those). */
export async function cleanupPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 3 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export interface RedisFacts {
  version: string;
  maxmemoryBytes: number;
  policy: string;
}

export async function redisFacts(url: string): Promise<RedisFacts> {
  const redis = new Redis(url, { maxRetriesPerRequest: 3 });
  try {
    const info = await redis.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const maxmemory = ((await redis.config('GET', 'maxmemory')) as string[])[1] ?? '0';
    const policy = ((await redis.config('GET', 'maxmemory-policy')) as string[])[1] ?? 'unknown';
    return { version, maxmemoryBytes: Number(maxmemory), policy };
  } finally {
    redis.disconnect();
  }
}

/** `used_memory` of the Redis, in bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 'NaN');
}

/** `INFO commandstats`: calls per command (lower case, e.g. `evalsha`, `bzpopmin`). */
export async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const out: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[match[1]!] = Number(match[2]);
  return out;
}

/**
 * `INFO commandstats`: microseconds spent per command (lower case). A script's `evalsha` holds the
 * time of the calls inside it, which are also counted under their own names.
 */
export async function commandUsec(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const out: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) out[match[1]!] = Number(match[2]);
  return out;
}

/** Calls per command between two `commandCalls` readings, largest first, zeros left out. */
export function callsBetween(before: Record<string, number>, after: Record<string, number>): Array<[string, number]> {
  return Object.entries(after)
    .map(([name, calls]): [string, number] => [name, calls - (before[name] ?? 0)])
    .filter(([, calls]) => calls > 0)
    .sort((a, b) => b[1] - a[1]);
}

/** CPU the Redis server has used (user + system, its main thread and the rest), in seconds. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

export interface KeyGroup {
  /** The key with its prefix cut and every id-like part shown as `*`, e.g. `doc:label:*`. */
  pattern: string;
  keys: number;
  bytes: number;
}

/**
 * What the keys under `prefix` hold, grouped by pattern: `MEMORY USAGE` of every key (nested
 * values sampled in full), largest group first. Ids are the parts with a digit or longer than 16
 * characters, so `doc:label:m12`, `label:3f2a…` and `activity:29401234` fold into one row each.
 */
export async function memoryByPattern(redis: Redis, prefix: string): Promise<KeyGroup[]> {
  const groups = new Map<string, KeyGroup>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 2000);
    cursor = next;
    if (keys.length === 0) continue;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', 0);
    const usages = (await pipeline.exec()) ?? [];
    keys.forEach((key, i) => {
      const pattern = key
        .slice(prefix.length + 1)
        .split(':')
        .map((part) => (/\d/.test(part) || part.length > 16 ? '*' : part))
        .join(':');
      const group = groups.get(pattern) ?? { pattern, keys: 0, bytes: 0 };
      group.keys += 1;
      group.bytes += Number(usages[i]?.[1] ?? 0);
      groups.set(pattern, group);
    });
  } while (cursor !== '0');
  return [...groups.values()].sort((a, b) => b.bytes - a.bytes);
}

/** Parts of `used_memory` that are no data (`MEMORY STATS`): client buffers and cached scripts. */
export async function memoryOverheads(redis: Redis): Promise<{ clientBytes: number; scriptBytes: number }> {
  const flat = (await redis.call('MEMORY', 'STATS')) as unknown[];
  const field = (name: string): number => {
    const at = flat.indexOf(name);
    return at >= 0 ? Number(flat[at + 1]) || 0 : 0;
  };
  return { clientBytes: field('clients.normal') + field('clients.slaves'), scriptBytes: field('lua.caches') + field('functions.caches') };
}

/** The keys under `prefix` whose name (prefix cut) does not match `pattern`. */
export async function keysOutside(redis: Redis, prefix: string, pattern: RegExp): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 2000);
    cursor = next;
    out.push(...keys.filter((key) => !pattern.test(key.slice(prefix.length + 1))));
  } while (cursor !== '0');
  return out;
}

/** DEL (not UNLINK: the memory is freed before it returns) in batches of 500. */
export async function deleteKeys(redis: Redis, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}
