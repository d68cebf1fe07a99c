/**
 * Vitest global setup: the e2e tests spawn the built binary, so `dist/` must match `src/`. (`npm ci`
 * builds it in its `prepare`, so this finds it fresh.) Builds once per run, and only when dist/ is
 * older than a source it is built from: test/tools/build.mjs, `npm ci`'s `prepare` too (type errors
 * outside src/ only warn there: the typecheck step reports them).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = new URL('../..', import.meta.url).pathname;

export default async function setup(): Promise<void> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [join(ROOT, 'test', 'tools', 'build.mjs')], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    if (stderr !== '') process.stderr.write(`global-build: ${stderr}`);
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`build for the e2e tests failed:\n${stdout}${stderr}`, { cause: error });
  }
}
