#!/usr/bin/env node
/* global process, URL */
/**
 * `npm ci`'s `prepare` and the tests' global setup: builds dist/ with `tsc -p test/tsconfig.json`
 * (src/ and test/ in one incremental program), unless the last build is newer than everything the
 * binary and the bench are built from (src/, test/bench/, the two tsconfig files, package.json,
 * package-lock.json): then it says so and does nothing.
 *
 * One program for the build and the typecheck: `npm run typecheck` (`tsc -p test/tsconfig.json
 * --noEmit`) reads this build's dist/.tsbuildinfo and checks again only what changed since: 7 s
 * instead of 59 s in CI's checks, for ~6 s more in the build (test/ is emitted to dist/test/ too).
 * `npm run build` (the image's) stays `tsc -p tsconfig.json`: src/ and test/bench/ only.
 *
 * Why not tsc every time: npm runs `prepare` in more places than `npm ci`. `npx carrier-sync …`
 * from the clone (the README's command line) installs the clone into npx's cache as a link on its
 * first run, and npm runs the linked package's `prepare` there: a whole tsc build, ~35 s of CPU,
 * before `--version` answers (issue 46, sixteenth session: 73–92 s on a busy machine, and its
 * output rewritten under the tests that were using it). An up-to-date build answers in
 * milliseconds.
 *
 * A build writes dist/.build-stamp once tsc has succeeded, dated at the build's start; a build that
 * failed leaves no stamp, so the next one builds again. Type errors outside src/ only warn, as long
 * as dist/src/main.js was emitted (tsc emits despite them): they do not change the binary, and the
 * typecheck step reports them.
 *
 * Exit status: 0 built (or up to date); tsc's status when src/ has errors or nothing was emitted.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const stampOf = (root) => join(root, 'dist', '.build-stamp');
const binaryOf = (root) => join(root, 'dist', 'src', 'main.js');
const SOURCES = ['src', 'test/bench'];
const FILES = ['tsconfig.json', 'test/tsconfig.json', 'package.json', 'package-lock.json'];

/** Whether `root`'s dist/ was built, successfully, after the newest of its sources changed. */
export function isBuildFresh(root = ROOT) {
  const built = mtimeOf(stampOf(root));
  if (built === null || mtimeOf(binaryOf(root)) === null) return false;
  const newest = Math.max(...SOURCES.map((dir) => newestTs(join(root, dir))), ...FILES.map((file) => mtimeOf(join(root, file)) ?? 0));
  return built >= newest;
}

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

function newestTs(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestTs(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, mtimeOf(path) ?? 0);
  }
  return newest;
}

function build() {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  // The stamp carries the build's start: a source saved while tsc ran is newer, and built next time.
  const started = new Date();
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'test', 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.status === 0) {
    writeFileSync(stampOf(ROOT), `${started.toISOString()}\n`);
    utimesSync(stampOf(ROOT), started, started);
    return 0;
  }
  const srcErrors = (result.stdout ?? '').split('\n').filter((line) => line.startsWith('src/'));
  const isEmitted = mtimeOf(binaryOf(ROOT)) !== null;
  if (result.status !== null && srcErrors.length === 0 && (result.stderr ?? '').trim() === '' && isEmitted) {
    process.stderr.write(`build: tsc reported errors outside src/ (dist/ was still emitted):\n${output}`);
    return 0;
  }
  process.stderr.write(`build: tsc -p test/tsconfig.json failed:\n${output}`);
  return result.status ?? 1;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  if (isBuildFresh()) {
    process.stdout.write('build: dist/ is newer than its sources; nothing to build\n');
    process.exit(0);
  }
  process.exit(build());
}
