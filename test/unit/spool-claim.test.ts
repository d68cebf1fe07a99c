/**
 * The claim's last check before it reads a file: unchanged since the watcher saw it. A file seen
 * only through an inbox event (size -1, no stat of ours) must also be writeStableMs old by its own
 * mtime, which covers writes whose events were lost (an inotify queue overflow). Real files in a
 * temporary folder; the checks return before anything is queued, so no queue is needed.
 */
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log.js';
import { claimFile, type ClaimDeps } from '../../src/spool/claim.js';
import { spoolPaths } from '../../src/spool/paths.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'carrier-sync-claim-'));
  await mkdir(join(root, 'labels'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function depsFor(writeStableMs: number): ClaimDeps {
  const unused = (): never => {
    throw new Error('a changed file must not get this far');
  };
  return {
    paths: spoolPaths(root, 'test'),
    spool: { ...loadConfig({ env: {} }).spool, writeStableMs },
    enqueue: undefined as never,
    batches: undefined as never,
    sink: { reject: unused, archive: unused, finishBatch: unused },
    track: unused,
    untrack: unused,
    isOwner: () => true,
    checks: undefined as never,
    clock: systemClock,
    logger: silentLogger,
  };
}

describe('claimFile', () => {
  it('leaves a file seen only by an event while its mtime is younger than writeStableMs', async () => {
    await writeFile(join(root, 'labels', 'a.pdf'), '%PDF-1.4 still being written');
    expect(await claimFile(depsFor(60_000), 'labels', 'a.pdf', { size: -1, mtimeMs: -1 })).toBe('changed');
    expect(await readdir(join(root, 'labels'))).toEqual(['a.pdf']);
  });

  it('leaves a file whose size or mtime differs from what the watcher saw', async () => {
    const path = join(root, 'labels', 'b.pdf');
    await writeFile(path, '%PDF-1.4 grown');
    const old = new Date(Date.now() - 3_600_000);
    await utimes(path, old, old);
    const seen = await stat(path);
    expect(await claimFile(depsFor(100), 'labels', 'b.pdf', { size: seen.size - 1, mtimeMs: seen.mtimeMs })).toBe('changed');
    expect(await claimFile(depsFor(100), 'labels', 'b.pdf', { size: seen.size, mtimeMs: seen.mtimeMs - 1 })).toBe('changed');
  });
});
