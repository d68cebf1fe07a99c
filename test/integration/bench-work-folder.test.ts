/**
 * The bench's work folder (test/bench/support/work-folder.ts): `BENCH_WORK_DIR` chooses it; a run's
 * spool is set aside under it (renamed, its files kept, no inode freed) and a path already gone is
 * skipped; and the system CPU a process spent (support/cpu.ts) grows with the system calls it makes.
 */
import { mkdtemp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { systemSeconds } from '../bench/support/cpu.js';
import { setAside, workFolderParent } from '../bench/support/work-folder.js';

const made: string[] = [];
const saved = process.env['BENCH_WORK_DIR'];
afterEach(async () => {
  if (saved === undefined) delete process.env['BENCH_WORK_DIR'];
  else process.env['BENCH_WORK_DIR'] = saved;
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

it('BENCH_WORK_DIR chooses the folder; without it, a folder that exists and takes files', async () => {
  process.env['BENCH_WORK_DIR'] = '/somewhere/chosen';
  expect(workFolderParent()).toBe('/somewhere/chosen');
  delete process.env['BENCH_WORK_DIR'];
  const parent = workFolderParent();
  const probe = await mkdtemp(join(parent, 'cs-bench-test-'));
  made.push(probe);
  expect((await stat(probe)).isDirectory()).toBe(true);
});

it('sets a spool aside with its files, keeps each one apart, and skips a path already gone', async () => {
  const workDir = await mkdtemp(join(tmpdir(), 'cs-bench-test-'));
  made.push(workDir);
  for (const name of ['spool', 'staging']) {
    await mkdir(join(workDir, name, 'labels'), { recursive: true });
    await writeFile(join(workDir, name, 'labels', 'a.pdf'), name);
  }
  const inode = (await stat(join(workDir, 'spool', 'labels', 'a.pdf'))).ino;
  await setAside({ workDir }, join(workDir, 'spool'), join(workDir, 'staging'), join(workDir, 'never-made'));
  await setAside({ workDir }, join(workDir, 'spool'));
  expect((await readdir(workDir)).sort()).toEqual(['set-aside']);
  const aside = (await readdir(join(workDir, 'set-aside'))).sort();
  expect(aside).toHaveLength(2);
  const spool = aside.find((name) => name.endsWith('-spool')) as string;
  expect(await readFile(join(workDir, 'set-aside', spool, 'labels', 'a.pdf'), 'utf8')).toBe('spool');
  // Renamed, not copied: the same inode.
  expect((await stat(join(workDir, 'set-aside', spool, 'labels', 'a.pdf'))).ino).toBe(inode);
});

it("reads a process's system CPU, which grows with its system calls", async () => {
  const before = await systemSeconds(process.pid);
  const dir = await mkdtemp(join(tmpdir(), 'cs-bench-test-'));
  made.push(dir);
  // Enough file system calls to spend several clock ticks (10 ms each) in the kernel.
  const deadline = Date.now() + 10_000;
  let after = before;
  for (let round = 0; after - before < 0.05 && Date.now() < deadline; round += 1) {
    for (let i = 0; i < 200; i += 1) await stat(dir);
    await writeFile(join(dir, String(round)), 'x');
    after = await systemSeconds(process.pid);
  }
  expect(after - before).toBeGreaterThanOrEqual(0.05);
});
