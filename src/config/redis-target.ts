/**
 * Where Redis is, read once from the config: one server, a primary found through Sentinel, or a
 * Cluster's seed nodes, with the user, password, db and TLS they share. The connection factory
 * (store/redis.ts) turns this into ioredis options; `status` and the holder file show `address`,
 * which never carries a user name or a password.
 *
 * TLS: `rediss://` turns it on with Node's default trust store, so a private CA comes in through
 * NODE_EXTRA_CA_CERTS (read by Node at start) and no certificate path is a setting of ours.
 *
 * A Redis on the same machine can be reached through its Unix socket, `unix:///path/redis.sock`
 * (`?db=N`; a user and password as `unix://user:password@localhost/path`): no TCP stack between
 * the two: on the large drop about a tenth less CPU for the daemon and Redis together
 * (BENCHMARKS.md). One server only: Sentinel and Cluster name their nodes by host and port.
 */
import type { SyncError } from '../errors.js';
import { configRefusal } from './refusal.js';
import type { RedisConfig } from './schema.js';

export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisAuth {
  username: string | undefined;
  password: string | undefined;
}

interface TargetBase extends RedisAuth {
  /** TLS to the data nodes. */
  isTls: boolean;
  db: number;
  /** For logs, status and the spool's holder file: scheme, hosts, ports, db. */
  address: string;
}

export type RedisTarget =
  | (TargetBase & { kind: 'single'; node: RedisNode; socketPath?: string })
  | (TargetBase & { kind: 'cluster'; nodes: RedisNode[] })
  | (TargetBase & { kind: 'sentinel'; sentinels: RedisNode[]; name: string; sentinelPassword: string | undefined; isSentinelTls: boolean });

export type RedisKind = RedisTarget['kind'];

/** `url`: REDIS_URL, or the managed redis-server's when it is unset (and no sentinel is set). */
export function redisTargetOf(redis: Pick<RedisConfig, 'cluster' | 'sentinels' | 'sentinelName' | 'sentinelPassword'>, url: string | null): RedisTarget {
  if (redis.sentinels.length > 0) return sentinelTarget(redis, url);
  if (url === null) throw refusal('config.error.redisUrlRequired');
  return redis.cluster ? clusterTarget(url) : singleTarget(url);
}

/** A plain URL as a single-server target (tests and tools that hold only a URL). */
export function singleTarget(url: string): RedisTarget {
  const parsed = parseRedisUrl(url);
  if (parsed.protocol === 'unix:') return socketTarget(parsed);
  return { kind: 'single', ...authOf(parsed), isTls: parsed.protocol === 'rediss:', db: dbOf(parsed), node: nodeOf(parsed), address: addressOf(parsed) };
}

/** `unix:///path/redis.sock[?db=N]`, or with a user and password `unix://user:password@localhost/path`. */
function socketTarget(url: URL): RedisTarget {
  const path = decodeURIComponent(url.pathname);
  if ((url.hostname !== '' && url.hostname !== 'localhost') || url.port !== '' || !path.startsWith('/') || path.endsWith('/')) {
    throw refusal('config.error.redisSocketUrl');
  }
  const db = Number(url.searchParams.get('db') ?? '0');
  if (!Number.isInteger(db) || db < 0) throw refusal('config.error.redisSocketUrl');
  return {
    kind: 'single',
    ...authOf(url),
    isTls: false,
    db,
    // Not used to connect (the socket is): every single target has a node, for the TLS check's type.
    node: { host: 'localhost', port: 0 },
    socketPath: path,
    address: `unix://${path}${db === 0 ? '' : `?db=${db}`}`,
  };
}

function clusterTarget(url: string): RedisTarget {
  const parts = url.split(',').map((part) => parseRedisUrl(part.trim()));
  if (parts.some((part) => part.protocol === 'unix:')) throw refusal('config.error.redisSocketOneServer');
  const first = parts[0]!;
  return {
    kind: 'cluster',
    ...authOf(first),
    isTls: first.protocol === 'rediss:',
    db: 0,
    nodes: parts.map(nodeOf),
    address: parts.map(addressOf).join(','),
  };
}

function sentinelTarget(redis: Pick<RedisConfig, 'sentinels' | 'sentinelName' | 'sentinelPassword'>, url: string | null): RedisTarget {
  const data = url === null ? null : parseRedisUrl(url);
  if (data?.protocol === 'unix:') throw refusal('config.error.redisSocketOneServer');
  const isTls = data?.protocol === 'rediss:';
  // A bare host:port follows REDIS_URL's scheme; an entry with its own scheme says it outright.
  const entries = redis.sentinels.map((entry) => (/^rediss?:\/\//.test(entry) ? entry : `${isTls ? 'rediss' : 'redis'}://${entry}`));
  const sentinels = entries.map((entry) => parseRedisUrl(entry));
  const schemes = new Set(sentinels.map((s) => s.protocol));
  if (schemes.size > 1) throw refusal('config.error.sentinelSchemes');
  const isSentinelTls = schemes.has('rediss:');
  const db = data === null ? 0 : dbOf(data);
  return {
    kind: 'sentinel',
    ...(data === null ? { username: undefined, password: undefined } : authOf(data)),
    isTls,
    db,
    sentinels: sentinels.map(nodeOf),
    name: redis.sentinelName,
    sentinelPassword: redis.sentinelPassword ?? undefined,
    isSentinelTls,
    address: `sentinel${isSentinelTls ? 's' : ''}://${sentinels.map((s) => `${s.hostname}:${s.port}`).join(',')}/${redis.sentinelName}${db === 0 ? '' : `/${db}`}`,
  };
}

function parseRedisUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    // The URL itself may hold a password: it is not repeated.
    throw refusal('config.error.redisNotUrl');
  }
}

/**
 * A refused Redis setting: the English message (logs, `.message`), and the catalog key the terminal's
 * line is worded from in the reader's language (cli/error-text.ts). No values: the URL may hold a password.
 */
function refusal(
  key:
    | 'config.error.redisUrlRequired'
    | 'config.error.sentinelSchemes'
    | 'config.error.redisNotUrl'
    | 'config.error.redisSocketUrl'
    | 'config.error.redisSocketOneServer',
): SyncError {
  return configRefusal(key);
}

function nodeOf(url: URL): RedisNode {
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) };
}

function authOf(url: URL): RedisAuth {
  return {
    username: url.username === '' ? undefined : decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
}

function dbOf(url: URL): number {
  return /^\/\d+$/.test(url.pathname) ? Number(url.pathname.slice(1)) : 0;
}

function addressOf(url: URL): string {
  const db = /^\/\d+$/.test(url.pathname) ? url.pathname : '';
  return `${url.protocol}//${url.hostname}:${url.port || '6379'}${db}`;
}

/**
 * The setting that gave Redis' address, for the line an operator reads when Redis does not answer
 * (a typo there is the usual cause). `isManaged`: REDIS_URL unset, the managed redis-server's.
 */
export function redisSettingOf(redis: Pick<RedisConfig, 'cluster' | 'sentinels'>, isManaged: boolean): string {
  if (redis.sentinels.length > 0) return 'CARRIER_SYNC_REDIS_SENTINELS (redis.sentinels)';
  if (isManaged) return 'the managed redis-server (REDIS_URL unset)';
  if (redis.cluster) return 'REDIS_URL (redis.url), the Cluster seed nodes';
  return 'REDIS_URL (redis.url)';
}
