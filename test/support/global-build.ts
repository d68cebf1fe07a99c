/**
 * Vitest global setup: the e2e tests spawn the built binary, so `dist/` must match `src/`. (`npm run
 * check` builds it in its typecheck step, so this finds it fresh.) Builds
 * once per run, and only when dist/src/main.js is missing or older than a source it is built from
 * (a stat walk: cheap when nothing changed).
 */
import { execFile } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = new URL('../..', import.meta.url).pathname;
const BIN = join(ROOT, 'dist', 'src', 'main.js');

export default async function setup(): Promise<void> {
  const built = await mtimeOf(BIN);
  const newest = Math.max(await newestMtime(join(ROOT, 'src')), (await mtimeOf(join(ROOT, 'tsconfig.json'))) ?? 0);
  if (built !== null && built >= newest) return;
  try {
    await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    // tsc emits despite type errors; errors outside src/ (test/bench is in that project too) do not
    // change the binary under test, so they only warn here. The typecheck step reports them.
    const srcErrors = stdout.split('\n').filter((line) => line.startsWith('src/'));
    if (srcErrors.length > 0 || stderr.trim() !== '' || (await mtimeOf(BIN)) === null) {
      throw new Error(`build for the e2e tests failed (tsc -p tsconfig.json):\n${stdout}${stderr}`, { cause: error });
    }
    process.stderr.write(`global-build: tsc reported errors outside src/ (dist/ was still emitted):\n${stdout}`);
  }
}

async function mtimeOf(path: string): Promise<number | null> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return null;
  }
}

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, await newestMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, (await mtimeOf(path)) ?? 0);
  }
  return newest;
}
