/**
 * The file calls of a claim and of an outcome move, for the kind of disk the spool is on. On a
 * local disk (the spool watched by inotify) they are synchronous: a few µs each on a cached inode,
 * where the async form is a round trip through libuv's thread pool (ingest bench: ~160 µs of the
 * event loop's time a file for a claim's four, see BENCHMARKS.md item 6; a failed file's move made
 * seven). On a network share (`spool.usePolling`) they stay async: a share that stalls must not
 * stall the event loop.
 *
 * Both report to the spool's disk state (disk-state.ts): a write, rename or mkdir failing with
 * ENOSPC/EDQUOT marks the disk full, a write that succeeds marks it usable again.
 */
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync, type Stats } from 'node:fs';
import { lstat, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import type { SpoolConfig } from '../config/schema.js';
import { noteSpoolCallFailure, noteSpoolCallSuccess, type SpoolCall } from './disk-state.js';

export type Disk = 'local' | 'share';

export interface FileCalls {
  /** null when nothing is at `path`. */
  lstat(path: string): Promise<Stats | null>;
  readFile(path: string): Promise<Buffer>;
  rename(from: string, to: string): Promise<void>;
  writeFile(path: string, text: string): Promise<void>;
  /** Makes `dir` and its parents when missing. */
  mkdir(dir: string): Promise<void>;
}

export function diskOf(spool: Pick<SpoolConfig, 'usePolling'>): Disk {
  return spool.usePolling ? 'share' : 'local';
}

export function fileCallsOf(disk: Disk): FileCalls {
  return disk === 'local' ? LOCAL_CALLS : SHARE_CALLS;
}

/** `calls` with its writing calls reporting to the spool's disk state. */
function watchingTheDisk(calls: FileCalls): FileCalls {
  const noted = async (name: SpoolCall, path: string, call: () => Promise<void>): Promise<void> => {
    try {
      await call();
    } catch (error) {
      noteSpoolCallFailure(name, error, path);
      throw error;
    }
    noteSpoolCallSuccess(name);
  };
  return {
    ...calls,
    rename: (from, to) => noted('rename', to, () => calls.rename(from, to)),
    writeFile: (path, text) => noted('writeFile', path, () => calls.writeFile(path, text)),
    mkdir: (dir) => noted('mkdir', dir, () => calls.mkdir(dir)),
  };
}

const LOCAL_CALLS: FileCalls = watchingTheDisk({
  lstat: async (path) => lstatSync(path, { throwIfNoEntry: false }) ?? null,
  readFile: async (path) => readFileSync(path),
  rename: async (from, to) => renameSync(from, to),
  writeFile: async (path, text) => writeFileSync(path, text),
  mkdir: async (dir) => void mkdirSync(dir, { recursive: true }),
});

const SHARE_CALLS: FileCalls = watchingTheDisk({
  lstat: lstatOrNull,
  readFile: (path) => readFile(path),
  rename,
  writeFile: (path, text) => writeFile(path, text),
  mkdir: async (dir) => void (await mkdir(dir, { recursive: true })),
});

export async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
