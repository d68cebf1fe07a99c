#!/usr/bin/env node
/* global process, URL */
/**
 * `npm run check`: the typecheck, the lint and the formatting check, one after another, beside the
 * tests rather than before them. The three are single-threaded (~2 minutes of one core on the
 * 2-core CI machine when it runs slow) while the tests leave part of a core idle as their daemons
 * wait; before them they held the tests back by their whole time (a clean clone's CI 12.2 minutes
 * on 2026-11-29, of which ~2 before the first test).
 *
 * The typecheck is `tsc -p test/tsconfig.json --noEmit` (src/ and test/ together; the build the
 * e2e tests run is made by `npm ci`'s prepare, or by the tests' global setup when src/ is newer).
 * The tests' output streams as it comes; each check's is printed when it ends, in full if it
 * failed. Exit status: the tests', else the first failing check's. A SIGINT or SIGTERM sent to this
 * process alone is passed on to what it started (Ctrl-C in a terminal reaches them all anyway),
 * so none is left running.
 */
import { spawn } from 'node:child_process';

const children = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exitCode = 130;
  });
}

const ROOT = new URL('../..', import.meta.url).pathname;
const CHECKS = [
  ['typecheck', 'node_modules/typescript/bin/tsc', ['-p', 'test/tsconfig.json', '--noEmit']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
  ['format', 'npm', ['run', '--silent', 'format:check']],
];

function run(command, args, { stream }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const isNode = command.endsWith('.js') || command.includes('/bin/');
    const child = spawn(isNode ? process.execPath : command, isNode ? [command, ...args] : args, {
      cwd: ROOT,
      stdio: stream ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ code: 1, output: `${output}${error.message}\n`, seconds: (Date.now() - started) / 1000 }));
    child.on(
      'close',
      (code, signal) => children.delete(child) && resolve({ code: code ?? (signal === null ? 1 : 128), output, seconds: (Date.now() - started) / 1000 }),
    );
  });
}

async function checksInTurn() {
  let failed = 0;
  for (const [name, command, args] of CHECKS) {
    if (process.exitCode === 130) return 130;
    const result = await run(command, args, { stream: false });
    const verdict = result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`;
    process.stdout.write(`\ncheck: ${name} ${verdict} in ${result.seconds.toFixed(0)} s\n`);
    if (result.code !== 0) {
      process.stdout.write(result.output);
      failed ||= result.code;
    }
  }
  return failed;
}

const [checks, tests] = await Promise.all([checksInTurn(), run('npm', ['test'], { stream: true })]);
process.stdout.write(
  `\ncheck: tests ${tests.code === 0 ? 'passed' : `FAILED (exit ${tests.code})`}; typecheck, lint and format ${checks === 0 ? 'passed' : 'FAILED (above)'}\n`,
);
process.exit(process.exitCode === 130 ? 130 : tests.code !== 0 ? tests.code : checks);
