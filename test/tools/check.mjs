#!/usr/bin/env node
/* global process, URL */
/**
 * `npm run check`: the typecheck, the lint and the formatting check at once, then, if all three
 * passed, the tests (`npm test`). The three are single-threaded and independent: one after another
 * they kept one of the CI machine's two cores idle for ~50 s before the first test (issue 46,
 * seventh session: a clean clone's CI 10.5 minutes).
 *
 * The typecheck is `npm run typecheck` (src/ and test/ in one program, no output: the build the
 * e2e tests run is made by `npm ci`'s prepare, or by the tests' global setup when src/ is newer).
 * Each check's output is printed when it ends, in full if it failed; the tests' streams as it
 * comes. Exit status: the first failing check's (the tests do not run), else the tests'. A SIGINT
 * or SIGTERM sent to this process alone is passed on to what it started (Ctrl-C in a terminal
 * reaches them all anyway), so none is left running.
 */
import { spawn } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;
const CHECKS = ['typecheck', 'lint', 'format:check'];
const children = new Set();
let stopping = false;

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopping = true;
    for (const child of children) child.kill(signal);
  });
}

function npmRun(script, { stream }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('npm', ['run', '--silent', script], { cwd: ROOT, stdio: stream ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    const end = (code, extra = '') => {
      children.delete(child);
      resolve({ code, output: output + extra, seconds: (Date.now() - started) / 1000 });
    };
    child.on('error', (error) => end(1, `${error.message}\n`));
    child.on('close', (code, signal) => end(code ?? (signal === null ? 1 : 128)));
  });
}

const results = await Promise.all(
  CHECKS.map(async (name) => {
    const result = await npmRun(name, { stream: false });
    process.stdout.write(`check: ${name} ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`} in ${result.seconds.toFixed(0)} s\n`);
    if (result.code !== 0) process.stdout.write(result.output);
    return result.code;
  }),
);
const failed = results.find((code) => code !== 0);
if (stopping) process.exit(130);
if (failed !== undefined) {
  process.stdout.write('check: the tests did not run (a check failed, above)\n');
  process.exit(failed);
}
const tests = await npmRun('test', { stream: true });
process.exit(stopping ? 130 : tests.code);
