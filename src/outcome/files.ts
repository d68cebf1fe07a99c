/**
 * Moving a file to its final place. Each move is a rename; `.error.json` is written (tmp + rename)
 * before its file arrives in failed/, so a file is never in failed/ without its reason. Redoing a
 * move after a crash is safe: a source that is gone was already moved. What a crash can leave
 * behind in failed/ — a report's temp file, or a label's or CT-e's report whose file never
 * followed it — is swept by `sweepInterruptedMoves` when the spool owner starts.
 */
import { copyFile, lstat, mkdir, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { candidateName } from '../spool/paths.js';

/** Why a file is in failed/: our code and message first, then whatever helps the operator. */
export interface ReportBody {
  code: string;
  message: string;
  [more: string]: unknown;
}

export type ErrorReport = ReportBody & { file: string; kind: string; at: string };

/** Moves `source` into `dir` under a free name; returns the target path, or null if `source` is gone. */
export async function moveInto(source: string, dir: string, fileName: string): Promise<string | null> {
  if (!(await exists(source))) return null;
  await mkdir(dir, { recursive: true });
  for (let n = 1; ; n += 1) {
    const target = join(dir, candidateName(fileName, n));
    if (await exists(target)) continue;
    await renameAcross(source, target);
    return target;
  }
}

/** Moves `source` into `dir` with `<name>.error.json` beside it. */
export async function failInto(source: string, dir: string, fileName: string, report: ErrorReport): Promise<string | null> {
  if (!(await exists(source))) return null;
  await mkdir(dir, { recursive: true });
  for (let n = 1; ; n += 1) {
    const target = join(dir, candidateName(fileName, n));
    if (await exists(target)) continue;
    await writeErrorReport(`${target}.error.json`, { ...report, file: candidateName(fileName, n) });
    await renameAcross(source, target);
    return target;
  }
}

const REPORT = '.error.json';
/** `.<name>.error.json.<pid>.tmp`: hidden, and recognisable by the sweep. */
const REPORT_TMP = /^\..+\.error\.json\.\d+\.tmp$/;

export async function writeErrorReport(path: string, report: ErrorReport): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(report, null, 2)}\n`);
  await rename(tmp, path);
}

/**
 * Clears what an interrupted move left in one failed/ folder: report temp files, and (with
 * `reportsNeedTheirFile`, for labels and CT-e) reports whose file is not beside them. Such a
 * report belongs to a refusal that never finished: its file is still in flight, and is refused
 * again with a fresh report or archived. (An events file's report of bad lines stays in failed/
 * while the file is archived, so events reports are left alone.) Run by the spool owner at start,
 * before anything moves files. Returns the names removed.
 */
export async function sweepInterruptedMoves(dir: string, reportsNeedTheirFile: boolean): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const present = new Set(names);
  const stale = names.filter((name) => REPORT_TMP.test(name) || (reportsNeedTheirFile && name.endsWith(REPORT) && !present.has(name.slice(0, -REPORT.length))));
  for (const name of stale) await unlink(join(dir, name)).catch(ignoreMissing);
  return stale;
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

async function renameAcross(source: string, target: string): Promise<void> {
  try {
    await rename(source, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(source, target);
    await unlink(source);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
