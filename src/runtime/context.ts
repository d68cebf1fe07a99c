/**
 * What every command that touches Redis shares: the connection (a managed redis-server when
 * REDIS_URL is unset), the deployment's keys, queues and counters. Each resource's close goes on
 * the shutdown stack as soon as it is open.
 */
import type { RedisConnection } from '../store/redis.js';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { configRefusal } from '../config/refusal.js';
import { createAttemptLog, type AttemptLog } from '../queue/attempts.js';
import { createAuthGate, type AuthGate } from '../gate/auth-gate.js';
import { createBatches, type Batches } from '../queue/batches.js';
import { createDedupMemory, type DedupMemory } from '../gate/event-claims.js';
import type { EnqueueDeps } from '../queue/enqueue.js';
import { createKeys, ITEM_KINDS, type Keys } from '../store/keys.js';
import { openQueues, type QueueSet } from '../queue/queues.js';
import { closeRedis, connectRedis } from '../store/redis.js';
import { checkTrust } from '../store/first-contact.js';
import { notePrimary } from '../store/topology.js';
import { redisSettingOf, redisTargetOf, type RedisTarget } from '../config/redis-target.js';
import { trackRedisHealth, type RedisHealth } from '../store/redis-health.js';
import { historyTtlSec } from '../journey/journey.js';
import { createStats, type Stats } from '../store/stats.js';
import { createClosers, type Closers } from './closers.js';
import { ensureManagedRedis } from './managed-redis/managed-redis.js';
import { awaitContact, type ContactOptions } from './redis-contact.js';
import { parseInfo } from '../store/redis-info.js';

export interface Context {
  config: Readonly<Config>;
  logger: Logger;
  clock: Clock;
  closers: Closers;
  /** Where Redis is (one server, Sentinel or Cluster); its `address` is safe to show. */
  redisTarget: RedisTarget;
  /** The Redis URL this process connected with: REDIS_URL, or the managed redis-server's (null with Sentinel and no REDIS_URL). */
  redisUrl: string | null;
  /** carrier-sync's own commands (scripts, pipelines, reads), auto-pipelined. */
  redis: RedisConnection;
  /** BullMQ's queues and workers (a worker duplicates it for its blocking reads); never auto-pipelined. */
  bullRedis: RedisConnection;
  /** Where every connection, queue and worker of this process reports its errors: one line per outage. */
  health: RedisHealth;
  keys: Keys;
  queues: QueueSet;
  stats: Stats;
  dedup: DedupMemory;
  attempts: AttemptLog;
  batches: Batches;
  authGate: AuthGate;
  enqueueDeps: EnqueueDeps;
}

/**
 * Auto-pipelining (and so a connection of BullMQ's own) on a single server only: with Sentinel and
 * Cluster the failover e2e tests (test/e2e/redis-failover.test.ts) failed with the two connections
 * at the last merge of main (BullMQ "Missing key" / "Lock mismatch" after the failover), not
 * understood in the time there was (BENCHMARKS.md, issue 29).
 */
function isAutoPipelined(target: RedisTarget): boolean {
  return target.kind === 'single';
}

export interface OpenOptions {
  /** The shutdown stack to push onto (the daemon's, which it may close while this still opens). */
  closers?: Closers;
  /** How the first contact with Redis waits (runtime/redis-contact.ts). */
  contact?: ContactOptions;
  /** Shared with the other threads of this process: one warn line per Redis outage (store/redis-health.ts). */
  toldBoard?: Int32Array;
}

export async function openContext(config: Readonly<Config>, logger: Logger, name: string, options: OpenOptions = {}): Promise<Context> {
  const closers = options.closers ?? createClosers(logger);
  try {
    let url = config.redis.url;
    const isManaged = url === null && config.redis.sentinels.length === 0;
    if (isManaged) {
      const managed = await ensureManagedRedis(config.redis.managedDir, config.redis.managedPort, logger);
      // First on the stack, so it runs last: after every connection of this process is closed.
      closers.push('managed redis-server', () => managed.stop());
      url = managed.url;
    }
    const redisTarget = redisTargetOf(config.redis, url);
    await checkTrust(redisTarget);
    // A failover seen by ioredis' reconnect-on-error (see store/redis.ts).
    let onFailover = (_error: Error): void => {};
    // Two connections: ours auto-pipelines (a busy daemon issues many small commands at once: one
    // socket write for each turn of the event loop instead of one each), BullMQ's does not (its
    // own pipelines break on one that does). Nothing orders commands across the two: what must
    // follow a BullMQ call awaits it.
    const redis = connectRedis(redisTarget, `carrier-sync:${name}`, (error) => onFailover(error), { autoPipelining: isAutoPipelined(redisTarget) });
    // With our connection not auto-pipelined (Sentinel, Cluster), BullMQ shares it.
    const bullRedis = isAutoPipelined(redisTarget) ? connectRedis(redisTarget, `carrier-sync:${name}:bullmq`, (error) => onFailover(error)) : redis;
    const keys = createKeys(config.prefix);
    const health = trackRedisHealth(redis, logger.child({ mod: 'redis' }), { probeKey: keys.healthProbe, toldBoard: options.toldBoard });
    onFailover = (error) => void health.report(error, 'failover');
    let isContacted = false;
    for (const connection of new Set([redis, bullRedis])) {
      connection.on('error', (error) => {
        // Before the first contact, awaitContact says what is wrong, in one line.
        if (!isContacted) return;
        if (!health.report(error, 'connection')) logger.warn({ err: error }, 'redis connection error');
      });
    }
    closers.push('redis', () => closeRedis(redis));
    if (bullRedis !== redis) closers.push('redis (bullmq)', () => closeRedis(bullRedis));
    closers.push('redis health', () => health.close());
    await awaitContact([...new Set([redis, bullRedis])], redisTarget, redisSettingOf(config.redis, isManaged), options.contact ?? {});
    isContacted = true;
    noteEachPrimary(redis, redisTarget, keys, config.prefix, logger);
    const queues = openQueues(bullRedis, config.prefix, config.delivery);
    // A BullMQ queue re-emits its connection's errors; without a listener it prints them with console.error.
    for (const queue of [...Object.values(queues.items), queues.housekeeping]) {
      queue.on('error', (error) => {
        if (!health.report(error, `queue:${queue.name}`)) logger.warn({ queue: queue.name, err: error }, 'queue error');
      });
    }
    closers.push('queues', () => queues.close());
    const stats = createStats(redis, keys.stats);
    const dedup = createDedupMemory(redis, keys, config.dedup.retentionDays);
    const clock = systemClock;
    return {
      config,
      logger,
      clock,
      closers,
      redisTarget,
      redisUrl: url,
      redis,
      bullRedis,
      health,
      keys,
      queues,
      stats,
      dedup,
      attempts: createAttemptLog(redis, keys),
      batches: createBatches(redis, keys),
      authGate: createAuthGate(
        redis,
        keys,
        ITEM_KINDS.map((kind) => queues.items[kind]),
      ),
      enqueueDeps: {
        redis,
        keys,
        queues,
        dedup,
        stats,
        clock,
        retentionSec: config.delivery.completedRetentionSec,
        historyTtlSec: historyTtlSec(config.history.retentionDays),
      },
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}

/**
 * Notes the primary this process reaches (for `status`' last failover): now, at every reconnect,
 * and on a Cluster at every refresh of the slot map (after a node is lost or a MOVED, and every 5 s). Best effort: a failure is a
 * debug line, the next (re)connect notes it again.
 */
function noteEachPrimary(redis: RedisConnection, target: RedisTarget, keys: Keys, prefix: string, logger: Logger): void {
  const note = (): void =>
    void notePrimary(redis, target, keys.topology, prefix).catch((error: unknown) => logger.debug({ err: error }, 'noting the Redis primary failed'));
  note();
  redis.on('ready', note);
  if (target.kind === 'cluster') redis.on('refresh', note);
}

/**
 * An evicting Redis drops queued items under memory pressure, silently: refused (CONFIG_INVALID,
 * exit 2) unless the operator allows it, then one warning. No persistence at all: a warning.
 */
export async function checkRedisDurability(redis: RedisConnection, allowEviction: boolean, logger: Logger, target?: RedisTarget): Promise<void> {
  const policy = await readEvictionPolicy(redis, logger);
  if (policy !== null && policy !== 'noeviction') {
    if (!allowEviction) throw configRefusal('config.error.evictingRedis', { policy }, { params: { policy } });
    logger.warn(
      { policy },
      'Redis maxmemory-policy is not noeviction: queued items can be evicted under memory pressure (started anyway: CARRIER_SYNC_ALLOW_EVICTING_REDIS=true)',
    );
  }
  try {
    const aof = (await redis.config('GET', 'appendonly')) as string[];
    const save = (await redis.config('GET', 'save')) as string[];
    if (aof[1] !== 'yes' && (save[1] ?? '') === '') logger.warn('Redis persistence is off (no AOF, no RDB): a Redis restart loses every queued item');
  } catch (error) {
    logger.warn({ err: error }, 'cannot read Redis config (CONFIG GET refused?): persistence not checked');
    return;
  }
  if (target !== undefined && isLoopbackTcp(target)) await pointOutUnixSocket(redis, logger);
}

/** One server reached over TCP on this machine's loopback (where its Unix socket, if it has one, would do). */
function isLoopbackTcp(target: RedisTarget): boolean {
  if (target.kind !== 'single' || target.socketPath !== undefined || target.isTls) return false;
  const { host } = target.node;
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Says once, at start, that the Redis reached over loopback TCP also listens on a Unix socket (a hint: a failure to read it is a debug line). */
async function pointOutUnixSocket(redis: RedisConnection, logger: Logger): Promise<void> {
  try {
    const socket = ((await redis.config('GET', 'unixsocket')) as string[])[1] ?? '';
    if (socket === '') return;
    logger.info(
      { socket, suggested: `unix://${socket}` },
      'Redis on this machine also listens on a Unix socket: REDIS_URL=unix://<its path> reaches it without TCP, about a tenth less CPU on a busy drop (docs/operations.md)',
    );
  } catch (error) {
    logger.debug({ err: error }, 'cannot read Redis unixsocket setting');
  }
}

/** From INFO, which managed Redis services keep when they disable CONFIG; null when unreadable. */
async function readEvictionPolicy(redis: RedisConnection, logger: Logger): Promise<string | null> {
  try {
    const policy = parseInfo(await redis.info('memory')).get('maxmemory_policy');
    if (policy !== undefined) return policy;
    logger.warn('Redis INFO has no maxmemory_policy: eviction not checked');
  } catch (error) {
    logger.warn({ err: error }, 'cannot read Redis INFO: eviction not checked');
  }
  return null;
}
