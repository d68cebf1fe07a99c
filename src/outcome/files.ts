/**
 * Moving a file to its final place. Each move is a rename; `.error.json` is written (tmp + rename)
 * before its file arrives in failed/, so a file is never in failed/ without its reason. Redoing a
 * move after a crash is safe: a source that is gone was already moved. What a crash can leave
 * behind in failed/ — a report's temp file, or a report whose file never followed it — is swept by
 * `sweepInterruptedMoves` when the spool owner starts.
 */
import { copyFile, readdir, readFile, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Lang } from '../i18n/translate.js';
import { errorReport, type ErrorReport, type ReportContent } from '../queue/failure-report.js';
import { fileCallsOf, type Disk, type FileCalls } from '../spool/file-calls.js';
import { candidateName, originalName, parseInflightName } from '../spool/paths.js';

/**
 * Finding a free name and renaming onto it are two steps, and a rename replaces a file that took
 * the name in between: two moves of files of one name into one folder at once (outcomes run
 * concurrently) would lose one. Only the spool's lease holder moves files, so it is enough to run
 * the moves of one name into one folder one at a time in this process.
 */
const movesUnderWay = new Map<string, Promise<unknown>>();

function oneAtATime<T>(dir: string, fileName: string, move: () => Promise<T>): Promise<T> {
  const key = `${dir}\0${originalName(fileName)}`;
  const previous = movesUnderWay.get(key) ?? Promise.resolve();
  const next = previous.then(move, move);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  movesUnderWay.set(key, settled);
  void settled.then(() => {
    if (movesUnderWay.get(key) === settled) movesUnderWay.delete(key);
  });
  return next;
}

/** Moves `source` into `dir` under a free name; returns the target path, or null if `source` is gone. */
export function moveInto(source: string, dir: string, fileName: string, disk: Disk = 'share'): Promise<string | null> {
  return oneAtATime(dir, fileName, () => moveNow(source, dir, fileName, fileCallsOf(disk)));
}

async function moveNow(source: string, dir: string, fileName: string, fs: FileCalls): Promise<string | null> {
  await ensureDir(dir, fs);
  for (let n = 1; ; n += 1) {
    const target = join(dir, candidateName(fileName, n));
    if ((await fs.lstat(target)) !== null) continue;
    try {
      await renameAcross(source, target, fs);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The source already moved (an outcome applied twice), or the folder was taken away.
      if ((await fs.lstat(source)) === null) return null;
      madeDirs.delete(dir);
      await ensureDir(dir, fs);
      await renameAcross(source, target, fs);
    }
    return target;
  }
}

/**
 * Folders this process made or found (archive/<kind>/<day>/, failed/<kind>/): a recursive mkdir of
 * a folder that exists costs a failed mkdir and a stat per move. A folder removed behind our back
 * shows up as ENOENT on the rename, which makes it again.
 */
const madeDirs = new Set<string>();

async function ensureDir(dir: string, fs: FileCalls): Promise<void> {
  if (madeDirs.has(dir)) return;
  await fs.mkdir(dir);
  if (madeDirs.size > 1000) madeDirs.clear();
  madeDirs.add(dir);
}

/**
 * Moves `source` into `dir` with `<name>.error.json` beside it, under a name whose file and report
 * are both free (an events file's bad-lines report stays in failed/ after its file was archived;
 * a later file of that name must not overwrite it). A report names the claim of an in-flight
 * source, which lets the start-up sweep tell a report cut off by a crash from a finished one.
 */
export function failInto(
  source: string,
  dir: string,
  fileName: string,
  report: { kind: string; at: string; content: ReportContent; lang?: Lang },
  disk: Disk = 'share',
): Promise<string | null> {
  return oneAtATime(dir, fileName, () => failNow(source, dir, fileName, report, fileCallsOf(disk)));
}

async function failNow(
  source: string,
  dir: string,
  fileName: string,
  report: { kind: string; at: string; content: ReportContent; lang?: Lang },
  fs: FileCalls,
): Promise<string | null> {
  if ((await fs.lstat(source)) === null) return null;
  await ensureDir(dir, fs);
  const claim = parseInflightName(basename(source))?.claimId ?? null;
  for (let n = 1; ; n += 1) {
    const target = join(dir, candidateName(fileName, n));
    if ((await fs.lstat(target)) !== null || (await fs.lstat(`${target}${REPORT}`)) !== null) continue;
    const body = errorReport({ file: candidateName(fileName, n), kind: report.kind, at: report.at, claim }, report.content, report.lang);
    await writeErrorReport(`${target}${REPORT}`, body, fs).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      madeDirs.delete(dir);
      await ensureDir(dir, fs);
      await writeErrorReport(`${target}${REPORT}`, body, fs);
    });
    await renameAcross(source, target, fs);
    return target;
  }
}

export const REPORT = '.error.json';
/** `.<name>.error.json.<pid>.tmp`: hidden, and recognisable by the sweep. */
const REPORT_TMP = /^\..+\.error\.json\.\d+\.tmp$/;

/** Writes the report whole under a temporary name, then renames it; a failure (a full disk) removes the temporary file. */
async function writeErrorReport(path: string, report: ErrorReport, fs: FileCalls): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    await fs.writeFile(tmp, `${JSON.stringify(report, null, 2)}\n`);
    await fs.rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => undefined);
    throw error;
  }
}

/** An events file's lines report, once the file was archived: it says where the file went (written whole again). */
export async function noteArchived(reportPath: string, archivedTo: string, disk: Disk = 'share'): Promise<void> {
  const fs = fileCallsOf(disk);
  const report = JSON.parse(await readFile(reportPath, 'utf8')) as ErrorReport;
  await writeErrorReport(reportPath, { ...report, archivedTo }, fs);
}

/** What is still waiting to be decided when the spool owner starts. */
export interface Pending {
  /** Claim ids of the files in `.inflight/<kind>/`. */
  claims: ReadonlySet<string>;
  /** Names of the files in the inbox. */
  inbox: ReadonlySet<string>;
}

/**
 * Clears what an interrupted `failInto` left in one failed/ folder: report temp files, and reports
 * without their file whose source is still waiting — its claim still in flight, or (refused at
 * claim time, no claim yet) its name still in the inbox. That source is refused again with a fresh
 * report, or archived. Any other report without its file is kept: an events file's bad-lines
 * report (the file was archived), or one whose file an operator took away. Run by the spool owner
 * at start, before anything moves files. Returns the names removed.
 */
export async function sweepInterruptedMoves(dir: string, pending: Pending): Promise<string[]> {
  const names = await listDir(dir);
  const present = new Set(names);
  const stale: string[] = [];
  for (const name of names) {
    if (REPORT_TMP.test(name)) stale.push(name);
    else if (name.endsWith(REPORT) && !present.has(name.slice(0, -REPORT.length))) {
      const claim = await readClaim(join(dir, name));
      const isWaiting = claim === undefined ? pending.inbox.has(originalName(name.slice(0, -REPORT.length))) : claim !== null && pending.claims.has(claim);
      if (isWaiting) stale.push(name);
    }
  }
  for (const name of stale) await unlink(join(dir, name)).catch(ignoreMissing);
  return stale;
}

/** The report's claim id; undefined when it has none (null in the report); null when the report cannot be read. */
async function readClaim(path: string): Promise<string | null | undefined> {
  try {
    const report = JSON.parse(await readFile(path, 'utf8')) as { claim?: unknown };
    return typeof report.claim === 'string' ? report.claim : undefined;
  } catch {
    return null;
  }
}

/** The names in `dir`; none when it does not exist yet. */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

async function renameAcross(source: string, target: string, fs: FileCalls): Promise<void> {
  try {
    await fs.rename(source, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(source, target);
    await unlink(source);
  }
}
