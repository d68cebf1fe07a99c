/**
 * The spool owner's side of a result: files leave the in-flight folder for archive/ or failed/.
 * Driven by outcome messages (one per finished item that came from a file) and by the claim step
 * for files that never became jobs. Every step is idempotent, so an outcome delivered twice, or
 * replayed after a crash, moves nothing twice.
 */
import { ERROR_CODES, type ErrorCode, type SyncError } from '../errors.js';
import { reasonOf, refusal } from '../i18n/reason.js';
import type { Lang } from '../i18n/translate.js';
import { readFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Batches, BatchState } from '../queue/batches.js';
import type { Refusal } from '../store/activity.js';
import { deadLetterFactsOfOutcome, deadLetterReport, eventsFileReport, type ErrorReport, type ReportContent } from '../queue/failure-report.js';
import { SPOOL_KIND_OF, type SpoolKind } from '../store/keys.js';
import type { OutcomeMessage } from '../store/payloads.js';
import { originalName, type SpoolPaths } from '../spool/paths.js';
import { fileCallsOf, lstatOrNull, type Disk } from '../spool/file-calls.js';
import { failInto, listDir, moveInto, noteArchived, REPORT } from './files.js';
import { loggerOf } from '../trace.js';

export interface InflightIndex {
  /** In-flight file names (in `.inflight/<kind>/`) of one content id. */
  find(kind: SpoolKind, contentId: string): string[];
  forget(kind: SpoolKind, name: string): void;
}

export interface OutcomeDeps {
  paths: SpoolPaths;
  /** 'local' (inotify) moves with synchronous file calls; 'share' (polling) keeps them async. */
  disk: Disk;
  batches: Batches;
  inflight: InflightIndex;
  clock: Clock;
  logger: Logger;
  /** Told where each file ended, for its journey (journey/journey.ts). */
  journey?: FileEndJournal;
  /** The language of `reason` in the reports written (CARRIER_SYNC_LANG); English when unset. */
  lang?: Lang;
  /**
   * Told of a file refused after its items were sent (an events file that changed in flight), for
   * the overview's refusals and the digests: the claim's refusals are counted where they happen.
   */
  refused?(refusal: Refusal): Promise<void>;
  /** Whether this process still holds the spool's lease: the archived events files' later looks move nothing once it does not. */
  isHeld?(): boolean;
}

export interface FileEndJournal {
  /** `from`: where the file was (its in-flight name tells its version). */
  ended(kind: SpoolKind, fileName: string, where: 'archived' | 'failed', from: string, target: string): void;
}

export interface Outcomes {
  apply(message: OutcomeMessage): Promise<void>;
  finishBatch(batchId: string): Promise<void>;
  /** A file refused (before it became a job, or by the API): to failed/ with its report; its path there (`~2` on a name clash), or null when it was gone. */
  reject(kind: SpoolKind, path: string, fileName: string, report: ReportContent): Promise<string | null>;
  /** A file whose identical twin was already accepted: archived without being sent again. */
  archive(kind: SpoolKind, path: string, fileName: string): Promise<void>;
}

export function createOutcomes(outcomeDeps: OutcomeDeps): Outcomes {
  const deps: Deps = { ...outcomeDeps, archivedWatch: createArchivedWatch(outcomeDeps) };
  return {
    archive: async (kind, path, fileName) => {
      await archive(deps, kind, path, fileName);
    },
    reject: (kind, path, fileName, report) => reject(deps, kind, path, fileName, report),
    finishBatch: (batchId) => finishBatch(deps, batchId),
    apply: (message) => applyOutcome(deps, message),
  };
}

const now = (deps: OutcomeDeps): Date => new Date(deps.clock.now());

/** The outcome stage's own parts besides what it is given. */
interface Deps extends OutcomeDeps {
  archivedWatch: ArchivedWatch;
}

async function archive(deps: OutcomeDeps, kind: SpoolKind, path: string, fileName: string): Promise<string | null> {
  const target = await moveInto(path, deps.paths.archive(kind, now(deps)), fileName, deps.disk);
  if (target !== null) deps.logger.info({ kind, file: fileName, to: target }, 'file archived');
  if (target !== null) deps.journey?.ended(kind, fileName, 'archived', path, target);
  return target;
}

async function reject(deps: OutcomeDeps, kind: SpoolKind, path: string, fileName: string, report: ReportContent): Promise<string | null> {
  const target = await failInto(
    path,
    deps.paths.failed(kind),
    fileName,
    { kind, at: now(deps).toISOString(), content: report, lang: deps.lang ?? 'en' },
    deps.disk,
  );
  if (target !== null) deps.logger.warn({ kind, file: fileName, to: target, code: report.code, reason: report.message }, 'file refused');
  if (target !== null) deps.journey?.ended(kind, fileName, 'failed', path, target);
  return target;
}

/** One outcome message: an events file's line counts toward its batch; a document moves its file. */
async function applyOutcome(deps: Deps, message: OutcomeMessage): Promise<void> {
  const origin = message.origin;
  if (origin.source !== 'spool') return;
  if ('batchId' in origin) {
    // Marked by the push gate's leave with this message (issue 46): the file moves when this line completed its batch.
    if (message.batch === 'complete') await finishBatch(deps, origin.batchId);
    if (message.batch !== undefined) return;
    const dead = message.result === 'dead-lettered' ? { line: origin.line, ...deadLetterFactsOfOutcome(message) } : undefined;
    if (await deps.batches.markDone(origin.batchId, message.jobId, dead)) await finishBatch(deps, origin.batchId);
    return;
  }
  // The file's move is no span (the item's end is its last attempt's event): its log lines name the trace.
  await applyDocument({ ...deps, logger: loggerOf(deps.logger, message.trace) }, { ...message, origin });
}

async function applyDocument(deps: OutcomeDeps, message: OutcomeMessage & { origin: { contentId: string; fileName: string } }): Promise<void> {
  const kind = SPOOL_KIND_OF[message.kind];
  // Identical bytes dropped for two deliveries share a content id: take only this delivery's files.
  const isThisDelivery = (name: string): boolean => {
    const fileName = name.slice(name.indexOf('~') + 1);
    return fileName.startsWith(`${message.deliveryId}.`) || fileName.startsWith(`${message.deliveryId}__`);
  };
  const names = deps.inflight.find(kind, message.origin.contentId).filter(isThisDelivery);
  for (const name of names) {
    const path = join(deps.paths.inflight(kind), name);
    const fileName = name.slice(name.indexOf('~') + 1);
    if (message.result === 'dead-lettered') await reject(deps, kind, path, fileName, deadLetterReport(deadLetterFactsOfOutcome(message)));
    else await archive(deps, kind, path, fileName);
    deps.inflight.forget(kind, name);
  }
  if (names.length === 0 && message.result === 'accepted') await archiveReplayed(deps, kind, message);
}

/** A dead letter replayed and accepted: its file leaves failed/ for archive/. */
async function archiveReplayed(deps: OutcomeDeps, kind: SpoolKind, message: OutcomeMessage & { origin: { fileName: string } }): Promise<void> {
  const dir = deps.paths.failed(kind);
  const { fileName } = message.origin;
  const reports = (await listDir(dir)).filter((name) => name.endsWith(REPORT) && originalName(name.slice(0, -REPORT.length)) === fileName);
  for (const reportName of reports) {
    const report = await readReport(join(dir, reportName));
    if (report?.jobId !== message.jobId) continue;
    // The file first, so a file is never in failed/ without its reason; a crash between the two
    // moves leaves the report, which the outcome, taken up again, moves on.
    await archive(deps, kind, join(dir, reportName.slice(0, -REPORT.length)), fileName);
    await moveInto(join(dir, reportName), deps.paths.archive(kind, now(deps)), `${fileName}.dead-letter.json`, deps.disk);
    return;
  }
}

/** Every line of an events file has its outcome: the file moves, then its batch is dropped. */
async function finishBatch(deps: Deps, batchId: string): Promise<void> {
  const state = await deps.batches.read(batchId);
  if (state === null) return;
  const { info } = state;
  await moveEventsFile(deps, state, join(deps.paths.inflight('events'), info.inflightName));
  deps.inflight.forget('events', info.inflightName);
  deps.logger.info(
    {
      kind: 'events',
      file: info.fileName,
      total: state.total,
      duplicates: info.duplicates,
      invalid: info.rejects.length,
      deadLettered: state.deadLettered.length,
    },
    'events file finished',
  );
  await deps.batches.drop(batchId);
}

/**
 * Any dead letter: the file to failed/. Invalid lines and no valid record at all (every line
 * invalid, a CSV header that cannot be read): nothing of it went to the API, so the file to failed/
 * too. Invalid lines beside valid records: a lines report in failed/, the file to archive/ (the API
 * accepted what it carried).
 */
async function moveEventsFile(deps: Deps, state: BatchState, path: string): Promise<void> {
  const { info } = state;
  // Valid records: the batch's events, and those found already taken (duplicates: the API holds them).
  const valid = state.total + info.duplicates;
  const size = await sizeChangedSinceRead(deps, info, path);
  if (size !== null) await refuseChanged(deps, state, path, size);
  else if (state.deadLettered.length > 0) {
    const reason = reasonOf('reason.events.deadLettered', { count: String(state.deadLettered.length), total: String(state.total) });
    const content = batchReport(state, refusal(deadLetteredCode(state), reason));
    await reject(deps, 'events', path, info.fileName, content);
  } else if (valid === 0 && info.rejects.length > 0) {
    const codes = new Set(info.rejects.map((line) => line.code));
    const first = info.rejects[0]!.code;
    const code = codes.size === 1 && isErrorCode(first) ? first : 'EVENT_BAD_RECORD';
    await reject(
      deps,
      'events',
      path,
      info.fileName,
      batchReport(state, refusal(code, reasonOf('reason.events.noValidRecord', { count: info.rejects.length }))),
    );
  } else if (info.rejects.length > 0) {
    const content = batchReport(state, refusal('EVENT_BAD_RECORD', reasonOf('reason.events.invalidLinesSent', { count: info.rejects.length })));
    const report = { kind: 'events', at: now(deps).toISOString(), content, lang: deps.lang ?? 'en' };
    const target = await failInto(path, deps.paths.failed('events'), info.fileName, report, deps.disk);
    // The lines report stays in failed/; the file itself was accepted and belongs in archive/. The
    // report then says where it went (a crash between the two leaves it saying null, the file beside it).
    const archived = target === null ? null : await archive(deps, 'events', target, info.fileName);
    if (target !== null && archived !== null) await noteArchived(`${target}${REPORT}`, relative(deps.paths.root, archived), deps.disk);
    if (archived !== null) deps.archivedWatch.add(archived, state);
  } else {
    const archived = await archive(deps, 'events', path, info.fileName);
    if (archived !== null) deps.archivedWatch.add(archived, state);
  }
}

/** An events file whose size is no longer the one its records were read from: to failed/ with EVENT_FILE_CHANGED, counted with the refusals. */
async function refuseChanged(deps: OutcomeDeps, state: BatchState, path: string, size: number): Promise<void> {
  const { info } = state;
  const reason = reasonOf('reason.events.changedInFlight', { read: String(info.fileBytes), now: String(size) });
  const content = batchReport(state, refusal('EVENT_FILE_CHANGED', reason));
  const target = await reject(deps, 'events', path, info.fileName, content);
  if (target !== null) await countRefused(deps, info.fileName, basename(target), content);
}

/**
 * An archived events file is looked at again 5 s after its move, then at three times the age each
 * time (15 s, 45 s, 2¼ min, ~7 min), for ten minutes: ~5 lstats a file. At most this many at once.
 */
const ARCHIVED_WATCH_MS = 10 * 60_000;
const ARCHIVED_FIRST_LOOK_MS = 5_000;
const ARCHIVED_WATCHED_MAX = 10_000;

interface ArchivedWatch {
  add(path: string, state: BatchState): void;
}

/**
 * Events files archived in the last ten minutes, looked at again now and then. A batch often
 * ends within milliseconds of its claim, long before a writer that appends a line now and then
 * writes its next one: that line lands in the archived file (a rename keeps an open file open), sent
 * by no one. A file found another size than its records were read from goes to failed/ with
 * EVENT_FILE_CHANGED, as one that changed in flight does; a file moved away by a person is left.
 * Only while this process holds the spool's lease; a restart forgets the list (what it archived
 * before is not looked at again).
 */
function createArchivedWatch(deps: OutcomeDeps): ArchivedWatch {
  const entries = new Map<string, { state: BatchState; since: number; nextAt: number }>();
  let timer: NodeJS.Timeout | undefined;
  let isChecking = false;
  const checkAll = async (): Promise<void> => {
    for (const [path, entry] of entries) {
      const now = deps.clock.now();
      if (now - entry.since >= ARCHIVED_WATCH_MS) {
        entries.delete(path);
        continue;
      }
      if (now < entry.nextAt || deps.isHeld?.() === false) continue;
      // Never the synchronous lstat of a local disk: up to thousands of files after a flood, off the loop.
      const stat = await lstatOrNull(path);
      const { info } = entry.state;
      if (stat === null) entries.delete(path);
      else if (stat.size !== info.fileBytes) {
        entries.delete(path);
        deps.logger.warn(
          { kind: 'events', file: info.fileName, read: info.fileBytes, now: stat.size },
          'an archived events file was written to after it was read',
        );
        await refuseChanged(deps, entry.state, path, stat.size);
      } else entry.nextAt = now + 2 * (now - entry.since);
    }
    if (entries.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  const tick = (): void => {
    if (isChecking) return;
    isChecking = true;
    void checkAll()
      .catch((error: unknown) => deps.logger.error({ err: error }, 'looking at archived events files again failed'))
      .finally(() => {
        isChecking = false;
      });
  };
  return {
    add(path, state) {
      if (state.info.fileBytes === undefined || entries.size >= ARCHIVED_WATCHED_MAX) return;
      const now = deps.clock.now();
      entries.set(path, { state, since: now, nextAt: now + ARCHIVED_FIRST_LOOK_MS });
      timer ??= setInterval(tick, ARCHIVED_FIRST_LOOK_MS).unref();
    },
  };
}

/** A refusal after sending, counted with the claim's (a Redis that is away loses the count, not the file: it is in failed/ already). */
async function countRefused(deps: OutcomeDeps, fileName: string, failedName: string, content: ReportContent): Promise<void> {
  const refusal: Refusal = {
    at: now(deps).toISOString(),
    kind: 'events',
    file: failedName,
    ...(failedName === fileName ? {} : { droppedAs: fileName }),
    code: content.code,
    reason: content.message,
    reasonSource: content.reasonSource,
  };
  await deps.refused?.(refusal).catch((error: unknown) => deps.logger.warn({ file: failedName, err: error }, 'a refusal was not counted for the overview'));
}

/**
 * The events file's size now, when it differs from the size its records were read from (null when it
 * does not, or the batch does not know it). A writer that keeps appending to the file after a pause
 * longer than `writeStableMs` appends to it in flight: the lines it wrote after the claim's read are
 * in no job, and archiving the file would bury them unsent. Its size, not its mtime, tells: a
 * share's clock may not be ours. A file rewritten to the same size is not seen (no hash is taken
 * again); a write between this look and the move is not either, and lands in the moved file.
 */
async function sizeChangedSinceRead(deps: OutcomeDeps, info: BatchState['info'], path: string): Promise<number | null> {
  if (info.fileBytes === undefined) return null;
  const stat = await fileCallsOf(deps.disk).lstat(path);
  return stat !== null && stat.size !== info.fileBytes ? stat.size : null;
}

/**
 * An events file's code for its dead letters: API_REJECTED when the API answered each of them (an
 * API_* code), else the first code that did not come from an answer (NETWORK, TIMEOUT: retries ran out).
 */
function deadLetteredCode(state: BatchState): ErrorCode {
  const codes = state.deadLettered.map((dead) => dead.error['code']).filter((code): code is ErrorCode => typeof code === 'string' && isErrorCode(code));
  return codes.find((code) => !code.startsWith('API_')) ?? 'API_REJECTED';
}

const isErrorCode = (code: string): code is ErrorCode => (ERROR_CODES as readonly string[]).includes(code);

function batchReport(state: BatchState, error: SyncError): ReportContent {
  return eventsFileReport(
    { code: error.code, message: error.message, reason: error.reason ?? reasonOf('code.UNKNOWN') },
    {
      invalidLines: state.info.rejects,
      deadLettered: state.deadLettered.map((dead) => ({ line: dead.line, ...deadLetterReport(dead) })),
      duplicates: state.info.duplicates,
      accepted: state.total - state.deadLettered.length,
      archivedTo: null,
    },
  );
}

async function readReport(path: string): Promise<ErrorReport | null | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as ErrorReport;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
}
