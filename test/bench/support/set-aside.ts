/**
 * A run's files are set aside, not deleted, until the bench process ends; and what a file's creation
 * costs on this machine is measured before each drop.
 *
 * Why. On a file system that avoids reusing a freed inode while it is recent — ext4 without a journal,
 * this machine's root (`recently_deleted()` under `find_inode_bit` in a kernel profile) — creating a
 * file costs ~0.5–0.8 ms of system CPU instead of ~20 µs for minutes after thousands of files were
 * deleted nearby: each new inode is found by stepping over every recently freed one. A scenario that
 * deleted its spool made the next run's daemon pay that on each file it creates — a refused file's
 * report, 6,000 in the large drop: ~3.3 s of its ~19 s of CPU, and its main thread blocked in
 * `writeFileSync` for the drain's last seconds (docs/benchmarks/log.md, the twelfth session). With
 * `--compare` every run but the first came after one. Renaming a tree frees no inode; the bench's
 * work folder, with everything set aside in it, is deleted once, when the bench ends.
 */
import { mkdir, mkdtemp, open, rename } from 'node:fs/promises';
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

const PROBE_FILES = 200;

/**
 * System CPU a new empty file costs here now (µs, the median of `PROBE_FILES` creates' average over
 * three rounds): ~20 on a file system at rest, several hundred after mass deletes (above). The files are set aside.
 */
export async function fileCreationMicros(env: Pick<BenchEnv, 'workDir'>): Promise<number> {
  const rounds: number[] = [];
  for (let round = 0; round < 3; round += 1) {
    const dir = await mkdtemp(join(env.workDir, 'create-probe-'));
    const before = process.cpuUsage().system;
    for (let i = 0; i < PROBE_FILES; i += 1) await (await open(join(dir, String(i)), 'wx')).close();
    rounds.push((process.cpuUsage().system - before) / PROBE_FILES);
    await setAside(env, dir);
  }
  return rounds.sort((x, y) => x - y)[1] as number;
}
