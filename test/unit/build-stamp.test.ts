/**
 * `npm ci`'s `prepare` (test/tools/build.mjs) builds only when dist/ is older than its sources: npm
 * runs `prepare` again under `npx carrier-sync …` from the clone, where a whole tsc build made the
 * first `--version` take over a minute. A tree of its own here, with its files' times set.
 */
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isBuildFresh } from '../tools/build.mjs';

let root: string | undefined;
afterEach(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  root = undefined;
});

async function tree(): Promise<string> {
  root = await mkdtemp(join(tmpdir(), 'cs-build-'));
  for (const dir of ['src/queue', 'test/bench', 'dist/src']) await mkdir(join(root, dir), { recursive: true });
  for (const file of ['src/main.ts', 'src/queue/enqueue.ts', 'test/bench/run.ts', 'tsconfig.json', 'package.json', 'package-lock.json', 'dist/src/main.js']) {
    await writeFile(join(root, file), '');
    await utimes(join(root, file), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'));
  }
  return root;
}

async function stamp(dir: string, at: string): Promise<void> {
  await writeFile(join(dir, 'dist', '.build-stamp'), '');
  await utimes(join(dir, 'dist', '.build-stamp'), new Date(at), new Date(at));
}

describe('the build stamp', () => {
  it('a build newer than every source is fresh; no stamp (never built, or the build failed) is not', async () => {
    const dir = await tree();
    expect(isBuildFresh(dir)).toBe(false);
    await stamp(dir, '2026-01-02T00:00:00Z');
    expect(isBuildFresh(dir)).toBe(true);
  });

  it.each(['src/queue/enqueue.ts', 'test/bench/run.ts', 'tsconfig.json', 'package-lock.json'])('%s changed after the build: not fresh', async (file) => {
    const dir = await tree();
    await stamp(dir, '2026-01-02T00:00:00Z');
    await utimes(join(dir, file), new Date('2026-01-03T00:00:00Z'), new Date('2026-01-03T00:00:00Z'));
    expect(isBuildFresh(dir)).toBe(false);
  });

  it('a stamp without the binary (dist/ partly removed) is not fresh', async () => {
    const dir = await tree();
    await stamp(dir, '2026-01-02T00:00:00Z');
    await rm(join(dir, 'dist', 'src', 'main.js'));
    expect(isBuildFresh(dir)).toBe(false);
  });
});
