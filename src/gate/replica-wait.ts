/**
 * With replicas, a request leaves only once its attempt record is on one: the gate's `enter` is
 * followed by `WAIT 1 <timeoutMs>` in the same pipeline (one round trip). A failover can then lose an
 * attempt record only for a request that never went out, so a promoted replica still knows who owns
 * every request on the wire (attempt-owner.ts), and a successor waits for that owner instead of
 * buying the answer again.
 *
 * WAIT blocks the connection it is sent on until the replica acknowledges (or the timeout), so the
 * enter and its WAIT go on a connection of their own, never on the one BullMQ renews its locks on.
 *
 * Whether there are replicas: `INFO replication` (`connected_slaves`) of the primary, read at start,
 * after each reconnect (a failover changes the answer), and every RECHECK_MS; on a Cluster, of the
 * master that serves the deployment's slot (every key shares the prefix's hash tag, so WAIT on that
 * master is the one that counts; another master's replicas say nothing). No
 * replica: no WAIT, nothing added to the push path. Replicas that vanish are still waited for
 * during REPLICA_GONE_MS (see `replicas()`), but only on the primary that had them: a promoted
 * replica (a new `master_replid`, or a new master for the slot) starts with no such memory. It
 * never had replicas of its own, so there is nothing to wait for, and holding every request for a
 * minute after each failover of a one-replica deployment (the usual managed-service shape) would
 * break "work flows again within 10 s".
 *
 * When WAIT times out (no replica acknowledged within `timeoutMs`: it lags, or the link is down but
 * not yet noticed), the request does NOT leave. The gate's slot and lock are given back and the job
 * asks again a second later. Sending anyway would re-open the very hole this closes (a failover now
 * would promote a replica that has never heard of the request, and its answer would be bought again);
 * holding costs only time, and a replica that is really gone is dropped from `connected_slaves` by
 * the primary after `repl-timeout` (60 s by default) and waited for REPLICA_GONE_MS more, after which
 * requests go without WAIT. One warn
 * line when acknowledgements stop, one info line when they come again.
 */
import type { Logger } from '../log.js';
import { Cluster } from 'ioredis';
import type { RedisConnection } from '../store/redis.js';
import { infoNumber, parseInfo } from '../store/redis-info.js';
import { parseAttemptRecord } from './attempt-owner.js';

/** How long a request waits for a replica's acknowledgement; a healthy one answers in a millisecond or two. */
export const REPLICA_WAIT_MS = 500;
/** How long after the last replica was seen WAIT is still required: Redis' own repl-timeout. */
const REPLICA_GONE_MS = 60_000;
const RECHECK_MS = 5000;

export interface ReplicaWait {
  /**
   * How many replicas to wait for (0: no WAIT): the primary's replicas as last read, and 1 for
   * REPLICA_GONE_MS after the last one was seen. A primary cut off from its replicas because one of
   * them was promoted (split brain) still takes writes, and loses them when it is demoted; so the
   * replicas' sudden absence holds requests and answers for a while instead of dropping the WAIT.
   */
  replicas(): number;
  /**
   * Resolves once the first reading is in (or failed): until then `replicas()` says 0 for want of
   * knowing, and the gate's enter waits for it rather than send a request without WAIT on a
   * deployment that has replicas.
   */
  readonly firstRead: Promise<void>;
  /** Whether the first reading is in (the enter then need not wait). */
  isRead(): boolean;
  readonly timeoutMs: number;
  /** The connection the enter and its WAIT go on (made on first use). */
  connection(): RedisConnection;
  /** A WAIT's reply after a 'go': true when a replica has the attempt record. Logs the start and end of a lag episode. */
  acknowledged(acks: number): boolean;
  close(): Promise<void>;
}

/** The primary serving the deployment now (its identity) and how many replicas it has. */
interface PrimaryView {
  primary: string;
  replicas: number;
}

/** `slotKey`: any key of the deployment (on a Cluster, it names the slot whose master counts). */
async function primaryView(redis: RedisConnection, slotKey: string): Promise<PrimaryView> {
  if (redis instanceof Cluster) {
    const slot = Number(await redis.cluster('KEYSLOT', slotKey));
    const [master = '', ...replicas] = redis.slots[slot] ?? [];
    // The master's own count of its replication links, as on Sentinel. ioredis' slot table lists
    // the replicas that the node it asked knew of at its last refresh (every 5 s, or a MOVED): a
    // replica not yet gossiped to that node was missing from it, and requests left without WAIT
    // for up to 10 s after a start (the failover sweep's Cluster seed 25: 41 answers before the
    // kill not waited for). The table's list stays the fallback when the master is not in the pool.
    const node = redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master);
    if (node === undefined) return { primary: master, replicas: replicas.length };
    const info = parseInfo(await node.info('replication'));
    return { primary: master, replicas: infoNumber(info, 'connected_slaves') ?? replicas.length };
  }
  const info = parseInfo(await redis.info('replication'));
  return { primary: info.get('master_replid') ?? '', replicas: infoNumber(info, 'connected_slaves') ?? 0 };
}

/**
 * `isRedisTold`: true while this process's Redis health tells an episode (store/redis-health.ts). A
 * WAIT that times out then is the failover's own doing (the replica being promoted, or the view not
 * yet refreshed), already said once: a debug line, not a second warning.
 */
export function watchReplicas(
  redis: RedisConnection,
  slotKey: string,
  logger: Logger,
  timeoutMs = REPLICA_WAIT_MS,
  isRedisTold: () => boolean = () => false,
): ReplicaWait {
  let count = 0;
  let primary: string | null = null;
  let lastSeenAt = -Infinity;
  let own: RedisConnection | null = null;
  let lagSince: number | null = null;
  let isLagWarned = false;
  let held = 0;
  const read = async (): Promise<void> => {
    try {
      const view = await primaryView(redis, slotKey);
      // A new primary has no vanished replicas to wait for: forget the last one's.
      if (primary !== null && view.primary !== primary) lastSeenAt = -Infinity;
      primary = view.primary;
      count = view.replicas;
      if (count > 0) lastSeenAt = performance.now();
    } catch {
      // Redis away: keep the last figure; the next read (a reconnect's) sets it.
    }
  };
  const onReady = (): void => void read();
  redis.on('ready', onReady);
  const timer = setInterval(onReady, RECHECK_MS);
  timer.unref();
  let isFirstRead = false;
  const firstRead = read().finally(() => {
    isFirstRead = true;
  });
  return {
    replicas: () => (count > 0 || performance.now() - lastSeenAt < REPLICA_GONE_MS ? Math.max(count, 1) : 0),
    firstRead,
    isRead: () => isFirstRead,
    timeoutMs,
    connection() {
      if (own === null) {
        own = redis.duplicate();
        // Its errors are the main connection's (same server, same moments): redis-health.ts reports those.
        own.on('error', () => {});
      }
      return own;
    },
    acknowledged(acks) {
      if (acks >= 1) {
        if (lagSince !== null && isLagWarned) {
          logger.info({ lagMs: Math.round(performance.now() - lagSince), requestsHeld: held }, 'Redis replica acknowledges again: requests leave again');
        }
        lagSince = null;
        return true;
      }
      if (lagSince === null) {
        lagSince = performance.now();
        held = 0;
        isLagWarned = !isRedisTold();
        if (isLagWarned)
          logger.warn(
            { timeoutMs, replicas: count },
            "no Redis replica acknowledged a request's attempt record: requests wait until one does (one line when it does)",
          );
        else logger.debug({ timeoutMs, replicas: count }, 'no Redis replica acknowledged during a Redis episode');
        // The view may be a failover behind: read it again now rather than at the next recheck.
        void read();
      }
      held += 1;
      return false;
    },
    async close() {
      clearInterval(timer);
      redis.off('ready', onReady);
      own?.disconnect();
    },
  };
}

/** What `confirmAnswer` found: whether the attempt record is still this attempt's, and how many replicas hold the primary's writes. */
export interface AnswerState {
  /** The record still names this attempt: its answer's write is not on this primary (never applied, or lost in a failover). */
  isPending: boolean;
  /** Replicas that acknowledged every write up to now; Infinity without replicas (nothing to wait for). */
  acks: number;
}

/**
 * After an answer's write: is it there, and on a replica? Reads the attempt record (the leave
 * removes it last), and with replicas writes a few bytes and WAITs, on the WAIT connection: the
 * replication stream is one ordered log, so a replica that acknowledged this write holds the leave
 * made before it on any connection. An answer not yet on a replica is kept (push/kept-answers.ts)
 * and confirmed again; if a failover lost it, the record is back (the promoted replica had it from
 * the enter's WAIT) and the answer is written again.
 */
export async function confirmAnswer(
  redis: RedisConnection,
  replicas: ReplicaWait | undefined,
  attemptKey: string,
  ackKey: string,
  member: string,
): Promise<AnswerState> {
  // The few bytes are written even without replicas: a demoted primary answers them READONLY, so
  // an answer is never judged on a replica's stale copy.
  const hasReplicas = replicas !== undefined && replicas.replicas() > 0;
  const pipeline = (hasReplicas ? replicas.connection() : redis).pipeline();
  pipeline.get(attemptKey).set(ackKey, '1', 'PX', 60_000);
  if (hasReplicas) pipeline.wait(1, replicas.timeoutMs);
  const [[readError, current] = [null, null], [setError] = [null], [waitError, acks] = [null, 0]] = (await pipeline.exec()) ?? [];
  const error = readError ?? setError ?? waitError;
  if (error) throw error;
  return { isPending: parseAttemptRecord(current as string | null)?.member === member, acks: hasReplicas ? Number(acks) : Infinity };
}

/** An answer written but not yet on a replica: kept, and confirmed again (kept-answers.ts treats it as Redis unavailable). */
export class AnswerUnconfirmedError extends Error {
  override readonly name = 'AnswerUnconfirmedError';
}
