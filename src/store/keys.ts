/**
 * Every queue name and Redis key of a deployment, built under its prefix. On Redis Cluster use a
 * hash-tagged prefix such as `{carrier-sync}` so that BullMQ's keys and ours share one slot.
 */
import { createHash, hash } from 'node:crypto';

/** What carrier-sync pushes: one BullMQ queue each. */
export type ItemKind = 'label' | 'cte' | 'collecting';
export const ITEM_KINDS: readonly ItemKind[] = ['label', 'cte', 'collecting'];

/** Spool inbox folders, as INTERFACE.md names them. */
export type SpoolKind = 'labels' | 'cte' | 'events';
export const SPOOL_KINDS: readonly SpoolKind[] = ['labels', 'cte', 'events'];

export const SPOOL_KIND_OF: Readonly<Record<ItemKind, SpoolKind>> = { label: 'labels', cte: 'cte', collecting: 'events' };
export const ITEM_KIND_OF: Readonly<Record<SpoolKind, ItemKind>> = { labels: 'label', cte: 'cte', events: 'collecting' };

/**
 * The BullMQ queue through which final results travelled back before they became a plain list
 * (`Keys.outcomes`); read once at start-up to carry over what an older version left in it.
 */
export function legacyOutcomeQueueName(spoolId: string): string {
  return `outcome.${spoolId}`;
}
/** The queue that holds the cron-scheduled housekeeping jobs. */
export const HOUSEKEEPING_QUEUE = 'housekeeping';

export interface Keys {
  /** BullMQ's own `prefix` option. */
  readonly bullPrefix: string;
  /** Sliding-window log of requests sent with one API key (a sorted set). */
  limiter(keyId: string): string;
  /** Set while sending with one API key is paused by a 429 (PX = Retry-After). */
  pause(keyId: string): string;
  /** Set while the API refuses our key (401); holds the reason as JSON. */
  readonly authFailure: string;
  /**
   * Per delivery, the earlier layout of the event_at claims (hash: normalised event_at → the source
   * that claimed it, or `done:<source>`): read where the compact claims have none (gate/event-claims.ts).
   */
  dedup(deliveryId: string): string;
  /**
   * The event_at claims of every delivery, in compact records (see gate/event-claims.ts): the name stem of the
   * shard that holds `deliveryId`'s claims; the time bucket's number follows it
   * (`event-claims:<shard>:<bucket>`, one string each).
   */
  eventClaims(deliveryId: string): string;
  /** Per delivery: collecting jobs not yet finished, scored by event time (send order gate). */
  eventOrder(deliveryId: string): string;
  /**
   * The document order and re-drop memory of every delivery, in compact records (see
   * document-record.ts): the name stem of the shard that holds `deliveryId`'s records; the
   * retention bucket's number follows it (`docs:<shard>:<bucket>`, one hash each).
   */
  documentRecords(deliveryId: string): string;
  /** The document records' bucket period (s), fixed by the deployment's first process (gate/document-record.ts). */
  readonly documentPeriod: string;
  /** Set once the document records of the earlier layout were carried over, by versions before runtime/upgrades.ts. */
  readonly documentRecordsMigrated: string;
  /** Upgrade steps that ran (hash: step id → JSON {at, version, changed}; runtime/upgrades.ts). */
  readonly upgrades: string;
  /** Per kind and delivery: held by the job whose document request is in flight. */
  documentLock(kind: ItemKind, deliveryId: string): string;
  /** Per delivery: collecting jobs parked behind an earlier event, woken when it finishes (set). */
  eventParked(deliveryId: string): string;
  /** Per delivery: held by the run of the event whose request is in flight (one on the wire at a time). */
  eventLock(deliveryId: string): string;
  /**
   * Name stem of the markers (job id follows) of an event registered in its delivery's order whose
   * job is not there (yet): see the push gate's `chainHead`.
   */
  readonly eventMissing: string;
  /** While the 401 gate is closed: 'open' when the next item may probe the key, else the probing job's id. */
  readonly authProbe: string;
  /** Counts the clears of the 401 gate (a request carries the epoch it was sent in). */
  readonly authEpoch: string;
  /** Errors of every attempt of one job (a list of JSON objects). */
  attempts(jobId: string): string;
  /** Per job: its attempt on the wire and the process that owns its answer (a string: owner, slot member and the grace mark, one a line; gate/attempt-owner.ts). */
  attemptOwner(jobId: string): string;
  /** Per worker process: set while it lives (PX, renewed; gate/attempt-owner.ts). */
  owner(ownerId: string): string;
  /** Deployment-wide: kept answers written late, requests sent again after their owner died (hash late, resent). */
  readonly answerCounts: string;
  /** A few bytes the Redis health probe writes to learn that writes are taken again (store/redis-health.ts). */
  readonly healthProbe: string;
  /** An events file in flight: its expected and finished job ids. */
  batch(batchId: string): string;
  batchJobs(batchId: string): string;
  batchDone(batchId: string): string;
  /** Counters shared by every process (hash): received, sent, duplicates, failed, dead-lettered by kind. */
  readonly stats: string;
  /** Last applied webhook registration (JSON). */
  readonly webhookApplied: string;
  /** What happened in one epoch minute, every process adding (hash, expires): see `store/activity.ts`. */
  activity(epochMinute: number): string;
  /** `activity(minute)` is this stem and the minute (for Lua that computes the minute itself). */
  readonly activityStem: string;
  /** Files refused locally: count by error code (hash) and the latest ones (list of JSON, newest first). */
  readonly refusalCounts: string;
  readonly refusalLatest: string;
  /** Events files archived with some lines refused (a count): the latest list shows them beside refused files. */
  readonly refusalLineFiles: string;
  /** Outcome messages on their way to the holder of one spool (a list; see `queue/outcome-list.ts`). */
  outcomes(spoolId: string): string;
  /** Who holds one spool (JSON {host, pid, since, …}), written by the spool's watcher. */
  spoolLease(spoolId: string): string;
  /** The ids of the spools whose lease was ever taken (a set), for `status`. */
  readonly spools: string;
  /** This deployment's random id (a string, written once with SET NX): see `store/deployment.ts`. */
  readonly deploymentId: string;
  /** The Redis primary as the processes last reached it, and the last failover they saw: hash (see `store/topology.ts`). */
  readonly topology: string;
  /** Notifications (see `notify/`): what one condition (of one subject, e.g. a spool) is in: hash {state, episode, since}. */
  notifyState(condition: string, subject?: string): string;
  /** Since when (ms) a condition has been bad without firing yet (its threshold not yet reached). */
  notifyPending(condition: string, subject?: string): string;
  /** The backlog's last progress: hash {finished, at}. */
  readonly notifyProgress: string;
  /** Dead letters failed up to this time (ms) were digested. */
  readonly notifyDeadLetterCursor: string;
  /** Refusal counts by code already digested (hash), and since when (ms) new ones wait for a digest. */
  readonly notifyRefusalsReported: string;
  readonly notifyRefusalsSince: string;
  /** Messages sent / failed attempts per channel (hash `<channel>:<result>`), for the metric. */
  readonly notifyCounts: string;
  /** The last message sent through each channel (hash channel → JSON), for the overview. */
  readonly notifyLast: string;
  /** The channels the scheduler runs with (hash channel → where it sends, without secrets). */
  readonly notifyChannels: string;
  /** Per epoch day: every delivery's steps of that day (hash: delivery id → steps; journey/journey.ts). */
  journeyDay(epochDay: number): string;
  /** `journeyDay(day)` is this stem and the day (for Lua that computes the day itself). */
  readonly journeyDayStem: string;
  /** Per epoch day and shard (journey.ts `fileIndexEntry`): file name → delivery, sorted set read by lex range. */
  journeyFiles(epochDay: number, shard: string): string;
  /** Per epoch day and shard (journey.ts `shaIndexEntry`): sha256 → file name, sorted set read by lex range. */
  journeyHashes(epochDay: number, shard: string): string;
  /** The indexes' earlier layout, one sorted set a day (`<file name>\n<delivery id>`, `<sha256 16 hex>\n<file name>`): read, no longer written. */
  journeyFilesUnsharded(epochDay: number): string;
  journeyHashesUnsharded(epochDay: number): string;
  /** Per epoch day and shard (2 hex): the folded files' sha256 → delivery, one string (journey/journey-compact.ts `packedShaEntry`). */
  journeyHashesPacked(epochDay: number, shard: string): string;
  /** Per epoch day: the deliveries a fold left in detail (not settled yet), `''` once the day was passed (journey-compact.ts). */
  journeyLeft(epochDay: number): string;
  /** Per epoch day: an events file's invalid lines (hash: file name → JSON; journey/events-file-lines.ts). */
  eventsFileLines(epochDay: number): string;
}

export function createKeys(prefix: string): Keys {
  const k = (...parts: string[]): string => [prefix, ...parts].join(':');
  return {
    bullPrefix: prefix,
    limiter: (keyId) => k('limiter', keyId),
    pause: (keyId) => k('pause', keyId),
    authFailure: k('auth-failure'),
    dedup: (deliveryId) => k('dedup', deliveryId),
    eventClaims: (deliveryId) => `${k('event-claims', String(claimShardOf(deliveryId)))}:`,
    eventOrder: (deliveryId) => k('event-order', deliveryId),
    eventParked: (deliveryId) => k('event-parked', deliveryId),
    eventLock: (deliveryId) => k('event-lock', deliveryId),
    eventMissing: `${k('event-missing')}:`,
    authProbe: k('auth-probe'),
    authEpoch: k('auth-epoch'),
    documentRecords: (deliveryId) => `${k('docs', String(documentShardOf(deliveryId)))}:`,
    documentPeriod: k('docs-period'),
    documentRecordsMigrated: k('migrated', 'doc-records'),
    upgrades: k('upgrades'),
    documentLock: (kind, deliveryId) => k('doc-lock', kind, deliveryId),
    attempts: (jobId) => k('attempts', jobId),
    attemptOwner: (jobId) => k('attempt-owner', jobId),
    owner: (ownerId) => k('owner', ownerId),
    answerCounts: k('answer-counts'),
    healthProbe: k('health-probe'),
    batch: (batchId) => k('batch', batchId),
    batchJobs: (batchId) => k('batch', batchId, 'jobs'),
    batchDone: (batchId) => k('batch', batchId, 'done'),
    stats: k('stats'),
    webhookApplied: k('webhook-applied'),
    activity: (epochMinute) => `${k('activity')}:${epochMinute}`,
    activityStem: `${k('activity')}:`,
    refusalCounts: k('refusals', 'count'),
    refusalLatest: k('refusals', 'latest'),
    refusalLineFiles: k('refusals', 'line-files'),
    outcomes: (spoolId) => k('outcomes', spoolId),
    spoolLease: (spoolId) => k('spool-lease', spoolId),
    spools: k('spools'),
    deploymentId: k('deployment-id'),
    topology: k('redis-topology'),
    notifyState: (condition, subject) => k('notify', 'state', condition, ...(subject === undefined ? [] : [subject])),
    notifyPending: (condition, subject) => k('notify', 'pending', condition, ...(subject === undefined ? [] : [subject])),
    notifyProgress: k('notify', 'progress'),
    notifyDeadLetterCursor: k('notify', 'dead-letter-cursor'),
    notifyRefusalsReported: k('notify', 'refusals-reported'),
    notifyRefusalsSince: k('notify', 'refusals-since'),
    notifyCounts: k('notify', 'counts'),
    notifyLast: k('notify', 'last'),
    notifyChannels: k('notify', 'channels'),
    journeyDay: (epochDay) => k('journey', String(epochDay)),
    journeyDayStem: `${k('journey')}:`,
    journeyFiles: (epochDay, shard) => k('journey-files', String(epochDay), shard),
    journeyHashes: (epochDay, shard) => k('journey-sha', String(epochDay), shard),
    journeyFilesUnsharded: (epochDay) => k('journey-files', String(epochDay)),
    journeyHashesUnsharded: (epochDay) => k('journey-sha', String(epochDay)),
    journeyHashesPacked: (epochDay, shard) => k('journey-shc', String(epochDay), shard),
    journeyLeft: (epochDay) => k('journey-left', String(epochDay)),
    eventsFileLines: (epochDay) => k('events-file-lines', String(epochDay)),
  };
}

/**
 * Document records are spread over this many shards per retention bucket so that each shard stays
 * a small hash, which Redis stores packed (a listpack while it holds ≤ 128 entries, its default
 * `hash-max-listpack-entries`): 1,024 shards keep that up to ~130,000 documents a bucket.
 */
export const DOCUMENT_SHARDS = 1024;

export function documentShardOf(deliveryId: string): number {
  return hash('sha256', deliveryId, 'buffer').readUInt32BE(0) % DOCUMENT_SHARDS;
}

/**
 * The event_at claims are spread over this many shards per time bucket. A shard is one string
 * (no packing threshold to stay under): more shards mean less to read per lookup and more keys
 * (~100 bytes of Redis bookkeeping each); 2,048 keep a shard of a 90-day deployment taking
 * 50,000 events a day at ~3 KB a bucket (BENCHMARKS.md, issue 23).
 */
export const CLAIM_SHARDS = 2048;

/** The claims' shard: FNV-1a (a shard needs spread, not secrecy; a sha256 here was 2.7 % of the push path's CPU). */
export function claimShardOf(deliveryId: string): number {
  return fnv1a32(deliveryId) % CLAIM_SHARDS;
}

/** 32-bit FNV-1a of a string's UTF-16 units. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A stable, non-secret id for an API key: the limiter and pause keys are named by it. */
export function keyIdOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 12);
}
