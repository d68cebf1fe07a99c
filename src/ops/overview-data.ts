/**
 * The numbers behind the `/ui` overview, read from Redis so that every process shows the same:
 * the state in one line, who holds the spool, the last hour minute by minute, the backlog per kind,
 * local refusals and dead letters. Redis away is a state of its own, answered without touching
 * Redis (a command would wait in ioredis's offline queue): the page must say so, not hang.
 */
import { translator, type Lang } from '../i18n/translate.js';
import type { Clock } from '../clock.js';
import { readActivity, readRefusals, type Refusal } from '../store/activity.js';
import type { AttemptLog } from '../queue/attempts.js';
import type { AuthFailure, AuthGate } from '../gate/auth-gate.js';
import { listDeadLetters } from '../queue/dead-letter.js';
import type { DedupMemory } from '../gate/event-claims.js';
import { ITEM_KINDS, SPOOL_KIND_OF, type ItemKind, type Keys, type SpoolKind } from '../store/keys.js';
import type { QueueSet } from '../queue/queues.js';
import type { RedisConnection } from '../store/redis.js';
import { appVersion } from '../version.js';
import { describeAuthFailure } from '../i18n/auth-failure.js';
import { redisRefusedReason, spoolDiskFullReason, type SpoolDiskReadiness } from './readiness.js';
import { readChannelReports, type ChannelReport } from '../store/notify-record.js';
import { readSpoolHolder, type SpoolHolder } from './spool-holder.js';
import type { Topology } from '../store/topology.js';

export const CHART_MINUTES = 60;
const LATEST_KEPT = 20;
/** Longest the page waits for Redis before it says Redis is not answering. */
const REDIS_DEADLINE_MS = 3000;
const DOWN_STATES = new Set(['end', 'close', 'reconnecting', 'connecting', 'wait']);

export interface OverviewSources {
  /** CARRIER_SYNC_LANG: the pages' language when the browser asks for none we speak. */
  lang?: Lang;
  redis: RedisConnection;
  keys: Keys;
  queues: QueueSet;
  attempts: AttemptLog;
  dedup: DedupMemory;
  authGate: AuthGate;
  clock: Clock;
  ratePerMinute: number;
  maxQueued: number;
  /** The spool this deployment's config names (its holder is shown), or null. */
  spoolId: string | null;
  /** Files waiting in each inbox; a kind left out (or a throw) shows as "n/a". */
  inboxCounts(): Promise<Partial<Record<SpoolKind, number>>>;
  /** This process's spool disk (watcher role); absent elsewhere. */
  spoolDisk?: () => SpoolDiskReadiness;
  /** Files sent whose moves the spool refuses (outcome/consumer.ts, watcher role); absent elsewhere. */
  movesRefused?: () => MovesRefusedView | null;
  /** Files that may not be moved out of the inbox (spool/claims-refused.ts, watcher role); absent elsewhere. */
  claimsRefused?: () => ClaimsRefusedView | null;
  /** Redis refuses writes (store/redis-health.ts): the banner. */
  redisWritesRefused?: () => { code: string; since: number; message: string } | null;
  isDraining(): boolean;
  /** How long journeys are kept (s): a replay from the page is recorded in its items' journeys. */
  historyTtlSec?: number;
  /** CARRIER_SYNC_TRACE_URL: the timeline page links an attempt's trace id through it. */
  traceUrl?: string | null;
  /** Redis' topology: kind, primary, replicas, last failover (see `store/topology.ts`). */
  topology?: () => Promise<Topology>;
}

/** Files sent whose moves the spool refuses (outcome/consumer.ts `movesRefused`). */
export interface MovesRefusedView {
  code: string;
  folder: string | null;
  /** ms since the epoch. */
  since: number;
  failedMoves: number;
}

/**
 * Moves out of the inbox the spool refuses (spool/claims-refused.ts `claimsRefused`): the first
 * refusal's code and folder, since when, the kinds. Its own shape here, as MovesRefusedView: ops/
 * may not import spool/ (STYLE.md §1), the watcher role hands the function in.
 */
export interface ClaimsRefusedView {
  code: string;
  folder: string | null;
  /** ms since the epoch. */
  since: number;
  kinds: string[];
}

export type StateCode =
  'working' | 'idle' | 'attention' | 'paused' | 'disk-full' | 'moves-refused' | 'claims-refused' | 'redis-full' | 'redis-down' | 'draining';

export interface OverviewState {
  code: StateCode;
  headline: string;
  /** The reason, for a pause or an unreachable Redis. */
  detail: string | null;
  since: string | null;
  /**
   * What the headline counts, so a page can say it in its language. The same sums the page's tiles
   * and backlog table show: `pending` is the "Backlog" tile (queued, sending, delayed), `inbox` the
   * inbox column, `deadLetters` the dead-letters tile. A headline never says "nothing waiting"
   * beside a backlog or dead letters (issue 45).
   */
  counts?: StateCounts;
  /** The 401 pause: what the API answered and to which kind, for the detail in the page's language. */
  authFailure?: AuthFailure;
  /** Redis' refusal (redis-full): its code and message, for the detail in the page's language. */
  refusal?: { code: string; message: string };
  /** Moves the spool refuses (moves-refused): the code, the folder, since when, how many failed. */
  moves?: MovesRefusedView;
  /** Moves out of the inbox the spool refuses (claims-refused): the code, the folder, since when, the kinds. */
  claims?: ClaimsRefusedView;
}

export interface StateCounts {
  /** pending + inbox (the English headline's number, kept for scripts). */
  waiting: number;
  pending: number;
  inbox: number;
  requests: number;
  deadLetters: number;
}

export interface ActivitySeries {
  /** Epoch seconds of each minute's start, oldest first. */
  at: number[];
  requests: number[];
  sent: number[];
  rateLimited: number[];
  deadLettered: number[];
  refused: number[];
}

export interface BacklogRow {
  kind: ItemKind;
  spoolKind: SpoolKind;
  queue: string;
  inbox: number | null;
  queued: number;
  active: number;
  delayed: number;
  deadLetters: number;
}

export interface DeadLetterRow {
  id: string;
  kind: ItemKind;
  queue: string;
  deliveryId: string;
  fileName: string | null;
  /** What the page groups by: the API's code when it sent one, else ours. */
  code: string;
  /** Ours (API_NOT_FOUND, …): what the reason is rendered from, as `dlq list` does. */
  errorCode: string;
  message: string;
  status: number | null;
  attempts: number;
  lastFailureAt: string | null;
}

export interface CodeCount {
  code: string;
  count: number;
}

export interface OverviewDetails {
  spoolHolder: SpoolHolder | null;
  /** Null where the process was not given a way to read it. */
  topology: Topology | null;
  activity: ActivitySeries;
  backlog: BacklogRow[];
  /** `total`: files refused (the tile); `lineFiles`: files archived with lines refused, listed in `latest` beside them. */
  refusals: { total: number; lineFiles: number; byCode: CodeCount[]; latest: Refusal[] };
  /** `codesOf`: how many dead letters `byCode` counts (the latest DEAD_LETTERS_READ of each kind). */
  deadLetters: { total: number; byCode: CodeCount[]; codesOf: number; latest: DeadLetterRow[] };
  /** The notification channels the scheduler runs with, each with its last message and last failure. */
  notifications: ChannelReport[];
}

export interface Overview {
  at: string;
  state: OverviewState;
  ratePerMinute: number;
  maxQueued: number;
  spoolId: string | null;
  /** The version of carrier-sync this process runs, and its Node.js (the page's footer). */
  version: string;
  node: string;
  /** Null while Redis is not answering. */
  details: OverviewDetails | null;
}

export async function readOverview(sources: OverviewSources): Promise<Overview> {
  const now = sources.clock.now();
  const base = {
    at: new Date(now).toISOString(),
    ratePerMinute: sources.ratePerMinute,
    maxQueued: sources.maxQueued,
    spoolId: sources.spoolId,
    version: appVersion(),
    node: process.version,
  };
  if (DOWN_STATES.has(sources.redis.status)) return { ...base, state: redisDown(`connection ${sources.redis.status}`), details: null };
  let details: OverviewDetails;
  let failure: Awaited<ReturnType<AuthGate['failure']>>;
  try {
    [details, failure] = await withDeadline(Promise.all([readDetails(sources, now), sources.authGate.failure()]), REDIS_DEADLINE_MS);
  } catch (error) {
    return { ...base, state: redisDown(error instanceof Error ? error.message : String(error)), details: null };
  }
  return { ...base, state: stateOf(sources, failure, details), details };
}

/** The state line from the numbers read (exported for its test). */
export function stateOf(
  sources: Pick<OverviewSources, 'isDraining' | 'redisWritesRefused' | 'spoolDisk' | 'movesRefused' | 'claimsRefused'>,
  failure: Awaited<ReturnType<AuthGate['failure']>>,
  details: OverviewDetails,
): OverviewState {
  if (sources.isDraining())
    return { code: 'draining', headline: 'Draining: this process is stopping and finishing its in-flight work', detail: null, since: null };
  if (failure !== null) {
    return {
      code: 'paused',
      headline: 'Paused: the API refuses our key (401); fix the key, sending resumes by itself once the API accepts it',
      detail: describeAuthFailure(translator('en'), failure),
      since: failure.at,
      authFailure: failure,
    };
  }
  const refused = sources.redisWritesRefused?.() ?? null;
  if (refused !== null) {
    return {
      code: 'redis-full',
      headline: 'Redis refuses writes (full): files wait in the inbox, nothing is sent until it takes writes again',
      detail: redisRefusedReason(refused),
      since: new Date(refused.since).toISOString(),
      refusal: { code: refused.code, message: refused.message.split('. script:')[0] ?? '' },
    };
  }
  const disk = sources.spoolDisk?.();
  if (disk?.isFull === true) {
    return {
      code: 'disk-full',
      headline: 'Spool disk full: files wait in the inbox until there is room',
      detail: spoolDiskFullReason(disk),
      since: disk.fullSince === null ? null : new Date(disk.fullSince).toISOString(),
    };
  }
  const moves = sources.movesRefused?.() ?? null;
  if (moves !== null) {
    const since = new Date(moves.since).toISOString();
    return {
      code: 'moves-refused',
      headline: 'Files sent but not moved: carrier-sync may not write in a spool folder; they wait in .inflight/',
      detail: `${moves.code} on ${moves.folder ?? 'a spool folder'}; ${moves.failedMoves} moves failed; ${moves.code === 'EROFS' ? 'the file system is read-only, mount it read-write' : 'give carrier-sync write access there'}: each move is tried again with a backoff`,
      since,
      moves,
    };
  }
  const claims = sources.claimsRefused?.() ?? null;
  if (claims !== null) {
    return {
      code: 'claims-refused',
      headline: 'Files wait in the inbox: carrier-sync may not move them out of it; nothing of them is sent meanwhile',
      detail: `${claims.code} on ${claims.folder ?? 'the spool'}; ${claims.code === 'EROFS' ? 'the file system is read-only, mount it read-write' : 'give carrier-sync write access to the spool folders'}: each file is looked at again with a backoff`,
      since: new Date(claims.since).toISOString(),
      claims,
    };
  }
  const counts = stateCounts(details);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const dead = counts.deadLetters === 0 ? '' : `; ${plural(counts.deadLetters, 'dead letter')} wait for a person`;
  if (counts.waiting === 0) {
    if (counts.deadLetters === 0) return { code: 'idle', headline: 'Working: nothing waiting to be sent', detail: null, since: null, counts };
    return { code: 'attention', headline: `Nothing to send${dead}`, detail: null, since: null, counts };
  }
  const inbox = counts.inbox === 0 ? '' : ` (${counts.inbox} in the inbox)`;
  return {
    code: 'working',
    headline: `Working: ${plural(counts.waiting, 'item')} to send${inbox}, ${plural(counts.requests, 'request')} this minute${dead}`,
    detail: null,
    since: null,
    counts,
  };
}

/** The headline's numbers, summed as the tiles and the backlog table sum them. */
export function stateCounts(details: OverviewDetails): StateCounts {
  const pending = details.backlog.reduce((sum, row) => sum + row.queued + row.active + row.delayed, 0);
  const inbox = details.backlog.reduce((sum, row) => sum + (row.inbox ?? 0), 0);
  return { waiting: pending + inbox, pending, inbox, requests: details.activity.requests.at(-1) ?? 0, deadLetters: details.deadLetters.total };
}

/** Dead letters of each kind the page reads (the newest): their codes make the chips. */
export const DEAD_LETTERS_READ = 1000;

function redisDown(reason: string): OverviewState {
  return { code: 'redis-down', headline: 'Redis unreachable: nothing is taken in or sent until it answers', detail: reason, since: null };
}

async function readDetails(sources: OverviewSources, now: number): Promise<OverviewDetails> {
  const { redis, keys } = sources;
  const [spoolHolder, topology, minutes, refusals, letters, backlog, notifications] = await Promise.all([
    sources.spoolId === null ? null : readSpoolHolder(redis, keys, sources.spoolId),
    sources.topology?.() ?? null,
    readActivity(redis, keys, now, CHART_MINUTES),
    readRefusals(redis, keys),
    listDeadLetters(sources, { latestPerKind: DEAD_LETTERS_READ }),
    readBacklog(sources),
    readChannelReports(redis, keys),
  ]);
  const series = (field: string): number[] => minutes.map((m) => m.fields[field] ?? 0);
  const deadLetterRows: DeadLetterRow[] = letters.map((l) => ({
    id: l.id,
    kind: l.kind,
    queue: sources.queues.items[l.kind].name,
    deliveryId: l.deliveryId,
    fileName: l.fileName,
    code: l.apiCode ?? l.errorCode,
    errorCode: l.errorCode,
    message: l.message,
    status: l.status,
    attempts: l.attempts,
    lastFailureAt: l.lastFailureAt,
  }));
  return {
    spoolHolder,
    topology,
    activity: {
      at: minutes.map((m) => m.at),
      requests: series('requests'),
      sent: series('sent'),
      rateLimited: series('rate_limited'),
      deadLettered: series('dead_lettered'),
      refused: series('refused'),
    },
    backlog,
    refusals: {
      total: sum(Object.values(refusals.counts)),
      lineFiles: refusals.lineFiles,
      byCode: byCount(Object.entries(refusals.counts)),
      latest: refusals.latest,
    },
    deadLetters: {
      // The total from the queues' counts; the codes from the latest DEAD_LETTERS_READ of each kind.
      total: sum(backlog.map((row) => row.deadLetters)),
      byCode: byCount([...countBy(deadLetterRows.map((row) => row.code))]),
      codesOf: deadLetterRows.length,
      latest: deadLetterRows.reverse().slice(0, LATEST_KEPT),
    },
    notifications,
  };
}

async function readBacklog(sources: OverviewSources): Promise<BacklogRow[]> {
  const inbox = await sources.inboxCounts().catch(() => ({}) as Partial<Record<SpoolKind, number>>);
  return Promise.all(
    ITEM_KINDS.map(async (kind) => {
      const queue = sources.queues.items[kind];
      const counts = await queue.getJobCounts('waiting', 'prioritized', 'waiting-children', 'active', 'delayed', 'failed');
      const n = (state: string): number => counts[state] ?? 0;
      return {
        kind,
        spoolKind: SPOOL_KIND_OF[kind],
        queue: queue.name,
        inbox: inbox[SPOOL_KIND_OF[kind]] ?? null,
        queued: n('waiting') + n('prioritized') + n('waiting-children'),
        active: n('active'),
        delayed: n('delayed'),
        deadLetters: n('failed'),
      };
    }),
  );
}

/** Dead letters whose page code (API code, else ours) is `code`. */
export async function deadLetterIdsWithCode(sources: OverviewSources, code: string): Promise<string[]> {
  return (await listDeadLetters(sources)).filter((l) => (l.apiCode ?? l.errorCode) === code).map((l) => l.id);
}

const sum = (values: number[]): number => values.reduce((total, n) => total + n, 0);

function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

function byCount(entries: Iterable<[string, number]>): CodeCount[] {
  return [...entries].map(([code, count]) => ({ code, count })).sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms);
    timer.unref();
  });
  promise.catch(() => {}); // a late failure after the deadline must not become an unhandled rejection
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
