/**
 * What `/readyz` answers. Ready means this process can take work: it is not shutting down, Redis
 * answers a PING within a short deadline, and the queues are not paused by a 401 from the API
 * (the auth gate), and the spool's disk takes writes (a watcher whose spool disk is full can
 * refuse or move no file), and Redis takes writes (not full: store/redis-health.ts). Each check says why it failed, for the operator reading the 503. A watcher
 * kept off its spool by a live holder of another deployment (spool/lease/holder-file.ts) is not ready either.
 */
import type { RedisConnection } from '../store/redis.js';
import type { AuthGate } from '../gate/auth-gate.js';

/** `/readyz`'s reason during a stall: `stalled: <what> since <ISO time>` (runtime/watchdog/watchdog.ts, alerts match on the start). */
export function stallReason(stall: { what: string; since: number }): string {
  return `stalled: ${stall.what} since ${new Date(stall.since).toISOString()}`;
}

export interface ReadinessState {
  isReady: boolean;
  reason?: string;
  /** Who holds the spool's lease, and this process's part (processes with the watcher role). */
  spool?: SpoolReadiness;
}

/** A watcher's view of its spool's lease. A standby is ready: it takes over when the holder goes. */
export interface SpoolReadiness {
  spoolId: string;
  role: 'holder' | 'standby' | 'stopped';
  /** This process. */
  self: { host: string; pid: number };
  holder: { host: string; pid: number; since: string; ttlMs: number; isSelf: boolean } | null;
  /** Another deployment's live holder named by the spool's holder file: this process keeps off the spool. */
  foreignHolder?: { prefix: string; redis: string; host: string; pid: number; expiresAt: string } | null;
}

export interface ReadinessDeps {
  redis: RedisConnection;
  authGate: AuthGate;
  isDraining: () => boolean;
  /** The spool's lease as this process sees it; null without the watcher role. */
  spool?: () => Promise<SpoolReadiness | null>;
  /** The spool's disk as this process's writes found it; absent without the watcher role. */
  spoolDisk?: () => SpoolDiskReadiness;
  /** Redis refuses writes (OOM, NOREPLICAS, MISCONF): the reply's code and since when; null when it takes them. */
  redisWritesRefused?: () => { code: string; since: number; message: string } | null;
  /** The watchdog's stall (runtime/watchdog/watchdog.ts), or null: `/readyz` then says `stalled: <what> since <when>`. */
  stalled?: () => { what: string; since: number } | null;
  /** How long a Redis command may take before Redis counts as not answering. */
  timeoutMs?: number;
}

/** What `spool/disk-state.ts` knows: writes fail with `code` since `fullSince` (ms since the epoch). */
export interface SpoolDiskReadiness {
  isFull: boolean;
  fullSince: number | null;
  code: string | null;
}

/** The start of `/readyz`'s reason while the spool's disk is full (the overview and alerts match on it). */
export const SPOOL_DISK_FULL = 'spool disk full';

/** The start of `/readyz`'s reason while Redis refuses writes. */
export const REDIS_WRITES_REFUSED = 'redis refuses writes';

export function redisRefusedReason(refused: { code: string; since: number; message: string }): string {
  return `${REDIS_WRITES_REFUSED} (${refused.code}) since ${new Date(refused.since).toISOString()}: ${refused.message.split('. script:')[0]}; files wait in the inbox, answers are kept until it takes writes again`;
}

export function spoolDiskFullReason(disk: SpoolDiskReadiness): string {
  const since = disk.fullSince === null ? '' : ` since ${new Date(disk.fullSince).toISOString()}`;
  return `${SPOOL_DISK_FULL}: writes in the spool fail with ${disk.code ?? 'ENOSPC'}${since}; files wait in the inbox until there is room`;
}

const DEFAULT_TIMEOUT_MS = 1000;

/** Connection states in which a command would only sit in ioredis's offline queue. */
const DOWN_STATES = new Set(['end', 'close', 'reconnecting']);

export function createReadiness(deps: ReadinessDeps): () => Promise<ReadinessState> {
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return async () => {
    if (deps.isDraining()) return unready('draining: the process is shutting down');
    if (DOWN_STATES.has(deps.redis.status)) return unready(`redis is not answering (connection ${deps.redis.status})`);
    let spool: SpoolReadiness | null;
    try {
      await withDeadline(deps.redis.ping(), timeoutMs, `no PING reply within ${timeoutMs} ms`);
      const failure = await withDeadline(deps.authGate.failure(), timeoutMs, `no reply within ${timeoutMs} ms`);
      spool = deps.spool === undefined ? null : await withDeadline(deps.spool(), timeoutMs, `no reply within ${timeoutMs} ms`);
      if (failure !== null) {
        return {
          ...unready(`queues paused: the API refused our key (401) at ${failure.at} on ${failure.endpoint}: ${failure.message}`),
          ...(spool === null ? {} : { spool }),
        };
      }
    } catch (error) {
      return unready(`redis is not answering: ${error instanceof Error ? error.message : String(error)}`);
    }
    const refused = deps.redisWritesRefused?.() ?? null;
    if (refused !== null) return { ...unready(redisRefusedReason(refused)), ...(spool === null ? {} : { spool }) };
    const stall = deps.stalled?.() ?? null;
    if (stall !== null) return { ...unready(stallReason(stall)), ...(spool === null ? {} : { spool }) };
    const foreign = spool?.foreignHolder ?? null;
    if (spool !== null && foreign !== null) return { ...unready(`spool held by another deployment (prefix "${foreign.prefix}" on ${foreign.redis})`), spool };
    const disk = deps.spoolDisk?.();
    if (disk?.isFull === true) return { ...unready(spoolDiskFullReason(disk)), ...(spool === null ? {} : { spool }) };
    return spool === null ? { isReady: true } : { isReady: true, spool };
  };
}

function unready(reason: string): ReadinessState {
  return { isReady: false, reason };
}

/** Rejects with `message` when `promise` has not settled within `ms`; the late result is dropped. */
function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
  });
  promise.catch(() => {}); // a reply that comes after the deadline must not become an unhandled rejection
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
