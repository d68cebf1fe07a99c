/**
 * Moving a file to its final place. Each move is a rename; `.error.json` is written (tmp + rename)
 * before its file arrives in failed/, so a file is never in failed/ without its reason. Redoing a
 * move after a crash is safe: a source that is gone was already moved.
 */
import { copyFile, lstat, mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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

export async function writeErrorReport(path: string, report: ErrorReport): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(report, null, 2)}\n`);
  await rename(tmp, path);
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
