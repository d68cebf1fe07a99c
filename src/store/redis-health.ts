/**
 * One log line when Redis stops taking work and one when it takes it again, per process, not one
 * per connection, reconnect attempt, claim or retry. Three kinds of trouble, each its own episode:
 *
 *   unreachable     the connection is gone (an outage, a restart). Starts on a lost-connection
 *                   error while the main connection is not ready; ends when it is ready again.
 *   writes-refused  Redis answers but refuses writes: OOM (maxmemory reached under noeviction),
 *                   NOREPLICAS (min-replicas-to-write not met), MISCONF (a failed RDB save with
 *                   stop-writes-on-bgsave-error). Ends when probe writes (a tiny key, SET PX,
 *                   every PROBE_MS) succeed QUIET_PROBES times in a row with no refusal seen
 *                   meanwhile, and for OOM with OOM_HEADROOM of maxmemory free (INFO memory):
 *                   nothing else tells that memory was freed or raised, and a Redis at its limit
 *                   flaps (a freed byte lets a write through, which fills it again).
 *   failover        a primary changed under us: READONLY (we still talk to the old primary, now a
 *                   replica), UNBLOCKED … master -> replica (a blocking command cut by the switch),
 *                   "Too many Cluster redirections", CLUSTERDOWN, TRYAGAIN, MASTERDOWN (also seen
 *                   through ioredis' reconnect-on-error, redis.ts). Ends as a refusal does: the
 *                   probe writes succeed (the connection has found the new primary). A failover
 *                   seen after a lost connection turns that outage into a failover.
 * Entering an episode logs one warn with the first error; leaving it logs one info with its
 * duration (`outageMs`, `refusedMs`, `failoverMs`) and how many errors it absorbed. Within an
 * episode, errors of its kind go to debug only. Errors that are not about Redis' availability (a
 * script's bug, a bad reply) are the caller's to log.
 *
 * Whoever must back off while Redis cannot take writes (the claims, the outcome moves, the workers)
 * asks `isWritable()`, and `onWritable` tells them it can again (kept answers are written at once).
 */
import { Cluster } from 'ioredis';
import type { Logger } from '../log.js';
import type { RedisConnection } from './redis.js';
import { codeOf, troubleOf, type RedisTrouble } from './redis-errors.js';
import { infoNumber, parseInfo } from './redis-info.js';

export {
  isConnectionError,
  isFailoverError,
  isRedisError,
  isRedisErrorText,
  isRedisUnavailable,
  isWritesRefusedError,
  type RedisTrouble,
} from './redis-errors.js';

export interface RedisEpisode {
  kind: RedisTrouble;
  /** ms since the epoch. */
  since: number;
  /** The first error's reply code (OOM, NOREPLICAS, READONLY, …) or the socket code. */
  code: string;
  message: string;
}

export interface RedisHealth {
  /** True when `error` is about Redis' availability, covered here; false: not, log it yourself. */
  report(error: unknown, source: string): boolean;
  /**
   * An episode another thread of this process saw (runtime/delivery-thread/delivery-thread.ts): Redis refusing
   * writes or failing over begins an episode here too (readiness, metrics, the overview and
   * notifications read this tracker), ended by this tracker's own probe writes. Unreachable is
   * not taken: this thread's own connection sees that.
   */
  adopt(episode: Pick<RedisEpisode, 'kind' | 'code' | 'message'>, source: string): void;
  isDown(): boolean;
  /** False while Redis is unreachable, refuses writes, or fails over. */
  isWritable(): boolean;
  /** Redis refuses writes (OOM, NOREPLICAS, MISCONF): the episode, or null. */
  writesRefused(): RedisEpisode | null;
  /** The episode under way, whatever its kind, or null. */
  current(): RedisEpisode | null;
  /** True during an episode, and for `withinMs` after one ended (a job lock lost then is its echo). */
  isTroubled(withinMs: number): boolean;
  /** The last failover that ended: when, and how long it took. */
  lastFailover(): { at: number; durationMs: number } | null;
  /** Outages this process has seen since it started (the `carrier_sync_redis_outages_total` counter). */
  outages(): number;
  /** Called whenever an episode ends (Redis takes writes again), with the episode; returns the unsubscribe. */
  onWritable(listener: (ended: RedisEpisode) => void): () => void;
  /** Called when an episode starts or ends (for gauges and banners). */
  onChange(listener: (episode: RedisEpisode | null) => void): void;
  /** Called when a failover ends: when (ms since the epoch) and how long it took. */
  onFailoverEnded(listener: (failover: { at: number; durationMs: number }) => void): void;
  close(): void;
}

/** Episodes ended in this process (any tracker): the claims' backoffs end with them (spool/claim-pass.ts). */
let recoveries = 0;

export function redisRecoveries(): number {
  return recoveries;
}

/** How often a refused or failing-over Redis is asked whether it takes writes again. */
const PROBE_MS = 1000;
/** Probe writes in a row, with no refusal seen meanwhile, that end a refusal or a failover. */
const QUIET_PROBES = 2;
/**
 * An OOM refusal ends only with this share of maxmemory free (INFO memory): a Redis at its limit
 * takes a probe whenever a deletion freed a few bytes, while the process's own writes (backing off)
 * are not there to be refused, so probes alone would end and start the episode again and again.
 */
const OOM_HEADROOM = 0.05;

const WARN: Readonly<Record<RedisTrouble, string>> = {
  unreachable: 'Redis unreachable: waiting for it to come back (one line when it does)',
  'writes-refused': 'Redis refuses writes: claims, retries and moves wait until it takes them again (one line when it does)',
  failover: 'Redis failover: the primary changed; waiting for the new one to take writes (one line when it does)',
};
const INFO: Readonly<Record<RedisTrouble, [string, string]>> = {
  unreachable: ['Redis reachable again', 'outageMs'],
  'writes-refused': ['Redis takes writes again', 'refusedMs'],
  failover: ['Redis failover over: the new primary takes writes', 'failoverMs'],
};

export interface HealthOptions {
  /** A key of the deployment's the write probe may set (a few bytes, with a TTL). */
  probeKey?: string;
  now?: () => number;
  /**
   * Shared by the trackers of one process's threads (runtime/delivery-thread/delivery-thread.ts), in shared
   * memory: the tracker whose episode began first tells it (its warn line, its end line); the
   * others log theirs at debug, so an outage is still one warning and one line when it is back
   * per process. 0: no episode told; 1: one is.
   */
  toldBoard?: Int32Array | undefined;
}

/** A board for `HealthOptions.toldBoard`, to hand to every thread of the process. */
export function createToldBoard(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** What the tracker's steps share: the episode under way and who listens. */
interface HealthState {
  redis: RedisConnection;
  logger: Logger;
  now: () => number;
  probeKey: string;
  episode: RedisEpisode | null;
  /** Errors the episode under way absorbed (its end line says how many). */
  absorbed: number;
  outages: number;
  lastFailover: { at: number; durationMs: number } | null;
  lastEndedAt: number;
  lastErrorAt: number;
  quietProbes: number;
  toldBoard: Int32Array | null;
  /** Whether this tracker told the episode under way (its warn line went out). */
  isTeller: boolean;
  probe: NodeJS.Timeout | undefined;
  writable: Set<(ended: RedisEpisode) => void>;
  changed: Array<(episode: RedisEpisode | null) => void>;
  failovers: Array<(failover: { at: number; durationMs: number }) => void>;
}

export function trackRedisHealth(redis: RedisConnection, logger: Logger, options: HealthOptions = {}): RedisHealth {
  const state: HealthState = {
    redis,
    logger,
    now: options.now ?? (() => Date.now()),
    probeKey: options.probeKey ?? 'carrier-sync:health-probe',
    episode: null,
    absorbed: 0,
    outages: 0,
    lastFailover: null,
    lastEndedAt: -Infinity,
    lastErrorAt: -Infinity,
    quietProbes: 0,
    toldBoard: options.toldBoard ?? null,
    isTeller: false,
    probe: undefined,
    writable: new Set(),
    changed: [],
    failovers: [],
  };
  const onReady = (): void => {
    if (state.episode?.kind === 'unreachable') endEpisode(state);
  };
  redis.on('ready', onReady);
  // A Cluster's connections to its nodes report here, not as the Cluster's own errors: a master
  // killed shows only as its node's lost connection (the Cluster stays ready), so without this the
  // failover was never an episode and every job lock it cost was an error line.
  const onNodeError = (error: unknown): void => void report(state, error, 'cluster-node');
  if (redis instanceof Cluster) redis.on('node error', onNodeError);
  return {
    report: (error, source) => report(state, error, source),
    adopt(episode, source) {
      if (episode.kind === 'unreachable' || state.episode !== null) return;
      const seen = Object.assign(new Error(episode.message), { code: episode.code });
      startEpisode(state, episode.kind, seen, source);
    },
    isDown: () => state.episode?.kind === 'unreachable',
    isWritable: () => state.episode === null,
    writesRefused: () => (state.episode?.kind === 'writes-refused' ? state.episode : null),
    current: () => state.episode,
    isTroubled: (withinMs) => state.episode !== null || state.now() - state.lastEndedAt <= withinMs,
    lastFailover: () => state.lastFailover,
    outages: () => state.outages,
    onWritable(listener) {
      state.writable.add(listener);
      return () => state.writable.delete(listener);
    },
    onChange: (listener) => void state.changed.push(listener),
    onFailoverEnded: (listener) => void state.failovers.push(listener),
    close() {
      clearInterval(state.probe);
      redis.off('ready', onReady);
      redis.off('node error', onNodeError);
    },
  };
}

/** An error from any connection, queue or worker of this process: true when it is about Redis' availability. */
function report(state: HealthState, error: unknown, source: string): boolean {
  const kind = troubleOf(error);
  if (kind === null) return false;
  const { episode, redis, logger } = state;
  if (kind === 'unreachable' && episode === null && redis.status === 'ready') {
    // On a Cluster the main connection stays ready when one node dies: a lost connection then
    // is a master going away, and its replica's promotion follows (a failover, ended by probe
    // writes to the deployment's slot). Elsewhere: a worker's own connection catching up after
    // the main one is back.
    if (redis instanceof Cluster) return startEpisode(state, 'failover', error, source);
    logger.debug({ source, err: error }, 'Redis connection error');
    return true;
  }
  if (episode === null) return startEpisode(state, kind, error, source);
  // Within an episode (of any kind: a failover often shows as a lost connection first; it then
  // ends as a failover, when the new primary takes a write, not when a connection is ready).
  if (episode.kind === 'unreachable' && kind === 'failover') {
    episode.kind = 'failover';
    startProbe(state);
  }
  state.absorbed += 1;
  state.lastErrorAt = state.now();
  logger.debug({ source, err: error }, 'Redis error within an episode');
  return true;
}

function startEpisode(state: HealthState, kind: RedisTrouble, error: unknown, source: string): true {
  const episode: RedisEpisode = { kind, since: state.now(), code: codeOf(error as Error), message: (error as Error).message };
  Object.assign(state, { episode, lastErrorAt: state.now(), absorbed: 1 });
  if (kind === 'unreachable') state.outages += 1;
  else startProbe(state);
  state.isTeller = state.toldBoard === null || Atomics.compareExchange(state.toldBoard, 0, 0, 1) === 0;
  state.logger[state.isTeller ? 'warn' : 'debug']({ source, code: episode.code, err: error }, WARN[kind]);
  for (const listener of state.changed) listener(episode);
  return true;
}

function endEpisode(state: HealthState): void {
  const ended = state.episode;
  if (ended === null) return;
  const [message, field] = INFO[ended.kind];
  const durationMs = Math.round(state.now() - ended.since);
  state.logger[state.isTeller ? 'info' : 'debug']({ [field]: durationMs, errors: state.absorbed }, message);
  if (state.isTeller && state.toldBoard !== null) Atomics.store(state.toldBoard, 0, 0);
  state.isTeller = false;
  recoveries += 1;
  state.lastEndedAt = state.now();
  state.episode = null;
  if (ended.kind === 'failover') {
    const failover = { at: state.now(), durationMs };
    state.lastFailover = failover;
    for (const listener of state.failovers) listener(failover);
  }
  clearInterval(state.probe);
  for (const listener of state.changed) listener(null);
  for (const listener of state.writable) listener(ended);
}

/**
 * A Redis at its memory limit flaps: a write that frees memory (a trim, a deletion) lets the next
 * few through, which fill it again. The episode ends only after QUIET_PROBES probe writes in a row
 * succeeded with no refusal seen meanwhile, so one episode is one pair of lines.
 */
function startProbe(state: HealthState): void {
  clearInterval(state.probe);
  state.quietProbes = 0;
  state.probe = setInterval(() => probeOnce(state), PROBE_MS);
  state.probe.unref();
}

function probeOnce(state: HealthState): void {
  const { redis } = state;
  if (redis.status !== 'ready') return;
  const sentAt = state.now();
  redis.set(state.probeKey, '1', 'PX', 10_000).then(
    async () => {
      const isRoomy = state.episode?.code !== 'OOM' || (await hasHeadroom(redis));
      state.quietProbes = state.lastErrorAt < sentAt && isRoomy ? state.quietProbes + 1 : 0;
      if (state.quietProbes >= QUIET_PROBES) endEpisode(state);
    },
    (error: unknown) => {
      if (troubleOf(error) !== null) state.absorbed += 1;
      state.quietProbes = 0;
    },
  );
}

/**
 * True when Redis has OOM_HEADROOM of its maxmemory free, or no limit; also when it cannot say (INFO
 * refused, a Cluster: which node refused is not known here), where the probes alone decide.
 */
async function hasHeadroom(redis: RedisConnection): Promise<boolean> {
  if (redis instanceof Cluster) return true;
  try {
    const info = parseInfo(await redis.info('memory'));
    const used = infoNumber(info, 'used_memory');
    const max = infoNumber(info, 'maxmemory');
    if (used === null || max === null || max === 0) return true;
    return used <= max * (1 - OOM_HEADROOM);
  } catch {
    return true;
  }
}
