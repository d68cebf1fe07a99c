/**
 * A run's files are set aside, not deleted, until the bench process ends.
 *
 * Why. On a file system that avoids reusing a freed inode while it is recent — ext4 without a journal,
 * this machine's root (`recently_deleted()` under `find_inode_bit` in a kernel profile) — creating a
 * file costs ~0.5–0.8 ms of system CPU instead of ~20 µs for minutes after thousands of files were
 * deleted nearby: each new inode is found by stepping over every recently freed one. A scenario that
 * deleted its spool made the next run's daemon pay that on each file it creates — a refused file's
 * report, 6,000 in the large drop: ~3.3 s of its ~19 s of CPU, and its main thread blocked in
 * `writeFileSync` for the drain's last seconds (docs/benchmarks/log.md, the twelfth session). With
 * `--compare` every run but the first came after one. Renaming a tree frees no inode; the bench's
 * work folder, with everything set aside in it, is deleted once, when the bench ends. A bench run
 * within minutes of another one's end still meets it: the drops report the daemon's system CPU,
 * which shows it (seconds more than usual).
 */
import { mkdir, rename } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { BenchEnv } from './report.js';

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
