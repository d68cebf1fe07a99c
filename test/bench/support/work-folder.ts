/**
 * The bench's work folder (spools, staged files): where it is, and why a run's files are set aside
 * in it rather than deleted.
 *
 * Where. `BENCH_WORK_DIR` when set; else `/dev/shm` (a tmpfs) when there is one with room for a
 * comparison's spools (TMPFS_ROOM: they stay until the bench ends, in memory; a container's
 * default `/dev/shm` is 64 MB); else the OS's temporary folder. On this machine's root file system (ext4 without a journal) creating a file
 * costs ~20 µs at rest but ~0.5–0.8 ms of system CPU for minutes after thousands of files were
 * deleted nearby: each new inode is found by stepping over every recently freed one
 * (`recently_deleted()` under `find_inode_bit` in a kernel profile). The daemon creates a file for
 * each refused file's report, 6,000 in the large drop: a run that met that state spent 3–4 s more
 * CPU (of ~17) and its drain's last seconds blocked in `writeFileSync`, whichever build it ran —
 * noise larger than the differences the comparisons look for. On a tmpfs four runs' system CPU
 * read 1.65–1.92 s (docs/benchmarks/log.md, the twelfth session). The daemon makes the same file
 * calls on any file system; what a disk adds is the machine's, not the build's. The report's
 * machine line says where the work folder was and what file system it is on.
 *
 * Set aside. Within one bench process a run's spool and staged files are renamed under
 * `<work folder>/set-aside/` (a rename frees no inode), and the work folder is deleted once, when
 * the bench ends: a run never follows another run's mass delete on a disk like the one above.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, statfsSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { BenchEnv } from './report.js';

const TMPFS = '/dev/shm';
/** Free space the tmpfs must have: ten runs of the large drop's spools and reports, with room to spare. */
const TMPFS_ROOM = 4 * 1024 ** 3;

/** The folder the bench's work folder is made in. */
export function workFolderParent(): string {
  const chosen = process.env['BENCH_WORK_DIR'];
  if (chosen !== undefined && chosen !== '') return chosen;
  try {
    accessSync(TMPFS, constants.W_OK);
    const { bavail, bsize } = statfsSync(TMPFS);
    return bavail * bsize >= TMPFS_ROOM ? TMPFS : tmpdir();
  } catch {
    return tmpdir();
  }
}

/** `<folder> (<file system type>)`, for the report's machine line. */
export function describeFolder(folder: string): string {
  try {
    return `${folder} (${execFileSync('stat', ['-f', '-c', '%T', folder], { encoding: 'utf8' }).trim()})`;
  } catch {
    return folder;
  }
}

let setAsideCount = 0;

/** Moves `paths` (a run's spool, its staged files) under the work folder's set-aside folder; a path that is gone is skipped. */
export async function setAside(env: Pick<BenchEnv, 'workDir'>, ...paths: string[]): Promise<void> {
  const aside = join(env.workDir, 'set-aside');
  await mkdir(aside, { recursive: true });
  for (const path of paths) {
    setAsideCount += 1;
    await rename(path, join(aside, `${setAsideCount}-${basename(path)}`)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
