/**
 * Claiming one stable inbox file: check it, then either refuse it (straight to failed/ with its
 * reason) or move it in flight and queue it. The order makes a crash at any point harmless:
 *   read + validate (nothing moved)  →  rename into .inflight/  →  queue (idempotent job ids)
 * A file found in .inflight/ at start goes through `resume*` below: validated again and queued
 * again, which adds nothing if its job already exists.
 */
import { takeFailpoint } from '../failpoints.js';
import { hash } from 'node:crypto';
import { lstat, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../clock.js';
import type { SpoolConfig } from '../config/schema.js';
import type { SyncError } from '../errors.js';
import { reasonOf, refusal } from '../i18n/reason.js';
import type { Logger } from '../log.js';
import type { ProgressTrack } from '../progress.js';
import type { Batches } from '../queue/batches.js';
import { refusalReport, type ReportContent } from '../queue/failure-report.js';
import { enqueueDocument, enqueueEvents, type EnqueueDeps } from '../queue/enqueue.js';
import { ITEM_KIND_OF, type SpoolKind } from '../store/keys.js';
import { collectingJobOf, type CollectingJob, type CteJob, type LabelJob } from '../store/payloads.js';
import type { EventsFileResult } from '../validate/events-file.js';
import type { CheckPool } from '../validate/pool/check-pool.js';
import { eventsFormatOf, parseSpoolName } from '../validate/spool-name.js';
import { documentGeneration } from '../gate/document-record.js';
import type { JourneyWriter } from '../journey/journey.js';
import { refusedSteps, type SeenFile } from '../queue/job-steps.js';
import { diskOf, fileCallsOf } from './file-calls.js';
import { noteInvalidLines } from './invalid-lines.js';
import { inSpan, isTracingOn, loggerIn, markError, messagingAttributes, SpanKind, withSpan, type Attributes, type Span } from '../trace.js';
import { claimStampOf, inflightName, newClaimId, type SpoolPaths } from './paths.js';

/** Where files go that do not become jobs; the outcome stage implements it. */
export interface SpoolSink {
  /** Resolves to the file's path in failed/ (a `~2` name on a clash) when the sink knows it. */
  reject(kind: SpoolKind, path: string, fileName: string, report: ReportContent): Promise<string | null | void>;
  archive(kind: SpoolKind, path: string, fileName: string): Promise<void>;
  finishBatch(batchId: string): Promise<void>;
}

export interface ClaimDeps {
  paths: SpoolPaths;
  spool: SpoolConfig;
  enqueue: EnqueueDeps;
  batches: Batches;
  sink: SpoolSink;
  /** Whether this process still holds the spool's lease: no file is claimed once it does not. */
  isOwner(): boolean;
  /** Records a file moved in flight (the outcome stage finds it by content id). */
  track(kind: SpoolKind, name: string): void;
  untrack(kind: SpoolKind, name: string): void;
  /** The file checks, on their threads (validate/pool/). */
  checks: CheckPool;
  clock: Clock;
  logger: Logger;
  /** Where refused files' journey steps go (the claim's other steps ride on the enqueue's round trips). */
  journey?: JourneyWriter;
  /** The claims in progress, for the watchdog (src/progress.ts). */
  claimProgress?: ProgressTrack;
}

export type ClaimResult = 'queued' | 'refused' | 'duplicate' | 'changed';

/**
 * Claims `<inbox>/<fileName>`, last seen with `seen` (size -1: seen only by an inbox event).
 * 'changed': it changed since, or moved or grew while being read; try again later.
 */
export async function claimFile(deps: ClaimDeps, kind: SpoolKind, fileName: string, seen: { size: number; mtimeMs: number }): Promise<ClaimResult> {
  const path = join(deps.paths.inbox(kind), fileName);
  if (!deps.isOwner()) return 'changed';
  const fs = fileCallsOf(diskOf(deps.spool));
  const stat = await fs.lstat(path);
  if (stat === null) return 'changed';
  if (!stat.isFile()) {
    const key = stat.isSymbolicLink() ? 'reason.spool.symlink' : stat.isDirectory() ? 'reason.spool.directory' : stat.isFIFO() ? 'reason.spool.fifo' : 'reason.spool.notRegular';
    await refuse(deps, kind, path, fileName, refused(kind, fileName, refusal('SPOOL_NOT_REGULAR_FILE', reasonOf(key, { file: fileName }))));
    return 'refused';
  }
  // Seen by a stat: it must not have changed since. Seen only by an inbox event (size -1): its own
  // mtime must be writeStableMs old too (the watcher already waited writeStableMs without events).
  const isUnchanged = seen.size < 0 ? Date.now() - stat.mtimeMs >= deps.spool.writeStableMs : stat.size === seen.size && stat.mtimeMs === seen.mtimeMs;
  if (!isUnchanged) return 'changed';
  // The item's trace starts here: a stable file, about to be read (docs/tracing.md).
  return inRootSpan(deps, kind, fileName, false, (claimDeps, span) => claimStable(claimDeps, kind, fileName, path, stat, span));
}

/** Runs a claim (a first one, or one resumed from .inflight/) in its file's root span; its log lines name the trace. */
function inRootSpan(
  deps: ClaimDeps,
  kind: SpoolKind,
  fileName: string,
  isResumed: boolean,
  claim: (deps: ClaimDeps, span: Span) => Promise<ClaimResult>,
): Promise<ClaimResult> {
  return inSpan(...rootSpanOf(kind, fileName, isResumed), async (span) => {
    const result = await claim(inClaim(deps, span), span);
    // 'queued' is what the enqueue's result says already.
    if (result !== 'queued') span.setAttribute('carrier_sync.claim.result', result);
    return result;
  });
}

/**
 * A file's root span (docs/tracing.md): a label's or CT-e's is its item's PRODUCER span, `publish
 * <kind>` — the claim, its validation (an event) and the enqueue in one span, the parent of every
 * attempt; an events file's is `claim events`, which each event's own trace links to.
 */
function rootSpanOf(kind: SpoolKind, fileName: string, isResumed: boolean): [string, { kind: SpanKind; attributes: Attributes }] {
  const attributes: Attributes =
    kind === 'events' ? { 'carrier_sync.file': fileName } : { ...messagingAttributes(ITEM_KIND_OF[kind], 'send'), 'carrier_sync.file': fileName };
  if (isResumed) attributes['carrier_sync.resumed'] = true;
  return [ROOT_SPAN_NAME[kind], { kind: kind === 'events' ? SpanKind.INTERNAL : SpanKind.PRODUCER, attributes }];
}

const ROOT_SPAN_NAME: Readonly<Record<SpoolKind, string>> = { labels: 'publish label', cte: 'publish cte', events: 'claim events' };

/**
 * The validation, on the root span (a span of its own cost as much as the request's: BENCHMARKS.md,
 * issue 38): a refusal marks it failed (error.type: the code); an events file's counts are an event.
 */
function noteValidated(span: Span, prepared: Prepared): void {
  if (!span.isRecording()) return;
  if ('error' in prepared) markError(span, prepared.error);
  else if ('events' in prepared) span.addEvent('validated', { 'carrier_sync.events.valid': prepared.events.records.length, 'carrier_sync.events.invalid': prepared.events.rejects.length });
  // A document that passed names its delivery (no event: an item's root carries three spans' worth already).
  else span.setAttribute('carrier_sync.delivery_id', prepared.document.deliveryId);
}

/** A stable file: read, checked, then refused or moved in flight and queued. */
async function claimStable(
  deps: ClaimDeps,
  kind: SpoolKind,
  fileName: string,
  path: string,
  stat: { size: number; mtimeMs: number },
  span: Span,
): Promise<ClaimResult> {
  const fs = fileCallsOf(diskOf(deps.spool));
  const limit = limitOf(deps.spool, kind);
  if (stat.size > limit.bytes) {
    await refuse(deps, kind, path, fileName, refused(kind, fileName, refusal(limit.code, reasonOf('reason.spool.tooLarge', { file: fileName, bytes: String(stat.size), max: String(limit.bytes) }))));
    return 'refused';
  }
  const bytes = await fs.readFile(path);
  const after = await fs.lstat(path);
  if (after === null || after.size !== bytes.length || after.mtimeMs !== stat.mtimeMs) return 'changed';

  // Hashed once: the claim id starts with the hash, the journey keeps all of it.
  const file: SeenFile = { sha256: hash('sha256', bytes, 'hex'), size: bytes.length, mtimeMs: stat.mtimeMs };
  const claimId = newClaimId(bytes, file.sha256);
  const prepared = await prepare(deps, kind, fileName, bytes, claimId, stat.mtimeMs);
  noteValidated(span, prepared);
  if ('error' in prepared) {
    await refuse(deps, kind, path, fileName, refused(kind, fileName, prepared.error), file);
    return 'refused';
  }
  const name = inflightName(claimId, fileName);
  const inflightPath = join(deps.paths.inflight(kind), name);
  // Checked again right before the move: reading and checking a large file takes a while.
  if (!deps.isOwner()) return 'changed';
  await fs.rename(path, inflightPath);
  deps.track(kind, name);
  try {
    return await queue(deps, kind, name, fileName, prepared, span, file);
  } catch (error) {
    // Redis went away between the rename and the add: put the file back so it is claimed again;
    // if even that fails, the in-flight reconcile takes it up. Not once this process lost the
    // spool's lease meanwhile (a failover longer than the lease): the holder after it has read
    // `.inflight/` and may be resuming this very file, and a file moved back under it would be
    // claimed a second time, under a new name that waits for an outcome already applied (a
    // loaded failover sweep left a label in `.inflight/` so). The file stays for the holder's reconcile.
    if (deps.isOwner()) {
      await rename(inflightPath, path).then(
        () => deps.untrack(kind, name),
        () => undefined,
      );
    } else deps.untrack(kind, name);
    throw error;
  }
}

/** An events file's valid records as the jobs its claim queues (the source of each: the file's claim and line). */
function eventJobsOf(deps: Pick<ClaimDeps, 'clock' | 'paths'>, fileName: string, { batchId, records }: { batchId: string; records: EventsFileResult['records'] }): CollectingJob[] {
  const receivedAt = new Date(deps.clock.now()).toISOString();
  return records.map((record) =>
    collectingJobOf(record, `file:${batchId}:${record.line}`, { source: 'spool', spoolId: deps.paths.spoolId, fileName, batchId, line: record.line }, receivedAt),
  );
}

/**
 * The jobs an events file in flight queued (read and checked again, as a resume does), or null when
 * it no longer passes its checks.
 */
export async function inflightEventJobs(deps: ClaimDeps, name: string, claimId: string, fileName: string): Promise<CollectingJob[] | null> {
  const path = join(deps.paths.inflight('events'), name);
  const bytes = await readFile(path);
  const { mtimeMs } = await lstat(path);
  const prepared = await prepare(deps, 'events', fileName, bytes, claimId, mtimeMs);
  return 'events' in prepared ? eventJobsOf(deps, fileName, prepared.events) : null;
}

/** Takes up a file found in .inflight/ (a claim interrupted by a crash, or a lost outcome). */
export function resumeInflight(deps: ClaimDeps, kind: SpoolKind, name: string, claimId: string, fileName: string): Promise<ClaimResult> {
  return inRootSpan(deps, kind, fileName, true, (claimDeps, span) => resumeClaim(claimDeps, kind, name, claimId, fileName, span));
}

async function resumeClaim(deps: ClaimDeps, kind: SpoolKind, name: string, claimId: string, fileName: string, span: Span): Promise<ClaimResult> {
  const path = join(deps.paths.inflight(kind), name);
  const bytes = await readFile(path);
  // A rename keeps the mtime: the generation is the one the first claim gave it.
  const { mtimeMs } = await lstat(path);
  const prepared = await prepare(deps, kind, fileName, bytes, claimId, mtimeMs);
  noteValidated(span, prepared);
  if ('error' in prepared) {
    await deps.sink.reject(kind, path, fileName, refused(kind, fileName, prepared.error));
    return 'refused';
  }
  deps.track(kind, name);
  return queue(deps, kind, name, fileName, prepared, span);
}

/** The claim's log lines name its trace (tracing on). */
function inClaim(deps: ClaimDeps, span: Span): ClaimDeps {
  return isTracingOn() ? { ...deps, logger: loggerIn(deps.logger, span) } : deps;
}

/** A file to failed/ with its report; its journey says so (seen, when it was read, and refused). */
async function refuse(deps: ClaimDeps, kind: SpoolKind, path: string, fileName: string, report: ReportContent, file?: SeenFile): Promise<void> {
  deps.journey?.add(...refusedSteps(kind, fileName, report, file));
  await deps.sink.reject(kind, path, fileName, report);
}

/**
 * A file this process may not read (EACCES, EPERM) for as long as the claim waits out (claim-pass.ts):
 * to failed/, its report naming the file's owner, group and mode and the user and groups this process
 * runs as — what the operator needs to fix the writer's permissions. A file gone meanwhile is left.
 */
export async function refuseUnreadable(deps: ClaimDeps, kind: SpoolKind, fileName: string, error: NodeJS.ErrnoException): Promise<void> {
  const path = join(deps.paths.inbox(kind), fileName);
  const stat = await lstat(path).catch(() => null);
  if (stat === null) return;
  const reason = reasonOf('reason.spool.unreadable', {
    file: fileName,
    error: error.code ?? 'EACCES',
    owner: String(stat.uid),
    group: String(stat.gid),
    mode: (stat.mode & 0o7777).toString(8).padStart(4, '0'),
    uid: String(process.getuid?.() ?? '?'),
    groups: (process.getgroups?.() ?? []).join(',') || String(process.getgid?.() ?? '?'),
  });
  await refuse(deps, kind, path, fileName, refused(kind, fileName, refusal('SPOOL_UNREADABLE', reason)));
}

/** A local refusal's report; it names the delivery when the file name carries one (labels, CT-e). */
function refused(kind: SpoolKind, fileName: string, error: { code: string; message: string }): ReportContent {
  const name = kind === 'events' ? null : parseSpoolName(kind, fileName);
  return refusalReport(error, name?.ok === true ? name.value.deliveryId : null);
}

export type Prepared = { document: LabelJob | CteJob } | { events: EventsFileResult & { batchId: string; fileBytes: number } } | { error: SyncError };

type PrepareDeps = Pick<ClaimDeps, 'spool' | 'checks' | 'clock' | 'logger'> & { paths: Pick<SpoolPaths, 'spoolId'> };

/** Checks a file's bytes and builds what will be queued; used by claims and by `backfill`. */
export async function prepare(
  deps: PrepareDeps,
  kind: SpoolKind,
  fileName: string,
  bytes: Buffer,
  claimId: string,
  mtimeMs: number,
  source: 'spool' | 'backfill' = 'spool',
): Promise<Prepared> {
  return check(deps, { kind, fileName, bytes, claimId, mtimeMs, source });
}

/** What `prepare` checks: a file's bytes, its name and kind, and what its claim gave it. */
interface CheckedFile {
  kind: SpoolKind;
  fileName: string;
  bytes: Buffer;
  claimId: string;
  mtimeMs: number;
  source: 'spool' | 'backfill';
}

async function check(deps: PrepareDeps, { kind, fileName, bytes, claimId, mtimeMs, source }: CheckedFile): Promise<Prepared> {
  const receivedAt = new Date(deps.clock.now()).toISOString();
  const origin = { source, spoolId: deps.paths.spoolId, fileName, contentId: claimId.slice(0, 16) };
  const generation = documentGeneration(mtimeMs, claimStampOf(claimId));
  if (kind === 'events') {
    const format = eventsFormatOf(fileName);
    if (format === null) return { error: badName(fileName) };
    const verdict = await deps.checks.events(bytes, format, { maxLineBytes: deps.spool.maxEventLineBytes, timeZone: deps.spool.eventsTimeZone });
    return verdict.ok ? { events: { ...verdict.value, batchId: claimId, fileBytes: bytes.length } } : { error: verdict.error };
  }
  const name = parseSpoolName(kind, fileName);
  if (!name.ok) return { error: name.error };
  if (kind === 'labels') {
    const verdict = await deps.checks.label(bytes, { maxBytes: deps.spool.maxLabelBytes });
    if (!verdict.ok) return { error: verdict.error };
    // The verdict decides what is sent (decoded, cut after %%EOF); the file itself stays as dropped.
    const { pdfBase64, byteLength, paddingBytes } = verdict.value;
    return {
      document: {
        kind: 'label',
        deliveryId: name.value.deliveryId,
        externalId: name.value.externalId,
        pdfBase64,
        byteLength,
        ...(paddingBytes > 0 ? { paddingBytes } : {}),
        origin,
        receivedAt,
        generation,
      },
    };
  }
  const verdict = await deps.checks.cte(bytes, { maxBytes: deps.spool.maxCteBytes });
  if (!verdict.ok) return { error: verdict.error };
  for (const warning of verdict.warnings) deps.logger.warn({ kind, deliveryId: name.value.deliveryId, file: fileName, warning }, 'CT-e accepted with a warning');
  return { document: { kind: 'cte', deliveryId: name.value.deliveryId, xml: verdict.value.xml, byteLength: bytes.length, origin, receivedAt, generation } };
}

/** Queues what a claim prepared; `span` is the file's root span (a document's PRODUCER span; the events' traces link to it). */
async function queue(deps: ClaimDeps, kind: SpoolKind, name: string, fileName: string, prepared: Prepared, span: Span, seen?: SeenFile): Promise<ClaimResult> {
  const path = join(deps.paths.inflight(kind), name);
  if ('document' in prepared) {
    const { jobId, result } = await enqueueDocument(deps.enqueue, prepared.document, seen, span);
    // Queued is a step (debug): the file's outcome line comes when it is archived or failed. At info,
    // this line cost ~11% of the daemon's CPU in the ingest bench (a synchronous write to stderr and
    // the redaction each; BENCHMARKS.md item 6). Settled here (superseded, already accepted) or a
    // dead letter replayed: that is news, info.
    const isStep = result === 'queued' || result === 'already-queued';
    deps.logger[isStep ? 'debug' : 'info']({ kind, deliveryId: prepared.document.deliveryId, file: fileName, jobId, result }, 'file queued');
    if (result === 'already-accepted' || result === 'superseded') {
      // Superseded: a newer document of this delivery was queued already; this one is never sent.
      await deps.sink.archive(kind, path, fileName);
      return 'duplicate';
    }
    return 'queued';
  }
  if ('events' in prepared) {
    const { batchId, records, rejects, fileBytes } = prepared.events;
    const jobs = eventJobsOf(deps, fileName, prepared.events);
    // Each event's trace links to the file's (the span is active in the call's synchronous part).
    const enqueued = await withSpan(span, () => enqueueEvents(deps.enqueue, jobs));
    await deps.enqueue.stats.add('received', 'collecting', rejects.length);
    await deps.enqueue.stats.add('failed', 'collecting', rejects.length);
    await noteInvalidLines(deps.enqueue, fileName, rejects, records.length);
    // Records this file's earlier claim sent (a re-read after a crash, a stuck batch taken up again)
    // are its own jobs, finished: the batch counts them, and they are no duplicates. They are marked
    // done with the seal: their claims say they were sent, and the outcome that marked them may
    // never come (a failover lost its mark: the batch stayed incomplete, its file in flight for good).
    const sent = new Set(enqueued.alreadySent.map(({ index }) => index));
    const duplicates = enqueued.duplicates.filter(({ index }) => !sent.has(index));
    const sentIds = enqueued.alreadySent.map(({ jobId }) => jobId);
    const jobIds = [...enqueued.jobIds, ...sentIds];
    for (const duplicate of duplicates) {
      deps.logger.info({ kind: 'collecting', deliveryId: duplicate.deliveryId, file: fileName, line: records[duplicate.index]?.line, eventAt: duplicate.eventAt }, 'duplicate event_at: not sent');
    }
    if (takeFailpoint('batch-never-seals')) {
      // CARRIER_SYNC_FAILPOINTS (tests only): this file's batch is left unsealed; the watchdog must see it.
      deps.logger.warn({ kind, file: fileName }, 'failpoint batch-never-seals: this events file\'s batch is not sealed');
      return 'queued';
    }
    const isDone = await deps.batches.seal({ batchId, inflightName: name, fileName, rejects, duplicates: duplicates.length, fileBytes }, jobIds, sentIds);
    deps.logger.info({ kind, file: fileName, queued: enqueued.jobIds.length, duplicates: duplicates.length, invalid: rejects.length }, 'events file queued');
    if (isDone) await deps.sink.finishBatch(batchId);
    return 'queued';
  }
  return 'refused';
}

function limitOf(spool: SpoolConfig, kind: SpoolKind): { bytes: number; code: 'LABEL_TOO_LARGE' | 'CTE_TOO_LARGE' | 'EVENT_FILE_TOO_LARGE' } {
  if (kind === 'labels') return { bytes: spool.maxLabelBytes, code: 'LABEL_TOO_LARGE' };
  if (kind === 'cte') return { bytes: spool.maxCteBytes, code: 'CTE_TOO_LARGE' };
  return { bytes: spool.maxEventsFileBytes, code: 'EVENT_FILE_TOO_LARGE' };
}

function badName(fileName: string): SyncError {
  return refusal('SPOOL_BAD_NAME', reasonOf('reason.spool.eventsExtension', { file: fileName }));
}
