/**
 * The daemon's log lines of one turn of the event loop go to stderr in one write (src/log.ts):
 * each write to a pipe is a system call, and a busy daemon logs ~4 lines a file. Run in a child
 * process of the built logger, stderr a pipe as under systemd or docker: its write system calls
 * are read from /proc/self/io, and every line must arrive, in order, even when the process exits
 * right after logging.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const LOG_MODULE = join(new URL('../..', import.meta.url).pathname, 'dist', 'src', 'log.js');

async function runChild(body: string): Promise<{ stdout: string; stderr: string }> {
  const script = `import { createLogger } from ${JSON.stringify(LOG_MODULE)};
import { readFileSync } from 'node:fs';
const writes = () => Number(/^syscw: (\\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
const logger = createLogger({ level: 'info' });
${body}`;
  return promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

const lineNumbers = (stderr: string): number[] =>
  stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { n: number }).n);

it('writes the lines of one turn — 200 promise callbacks logging one line each — in a few writes, all of them, in order', async () => {
  const { stdout, stderr } = await runChild(`
const before = writes();
await Promise.all(Array.from({ length: 200 }, async (_, n) => { await null; logger.info({ n }, 'item sent'); }));
await new Promise((resolve) => setImmediate(resolve));
process.stdout.write(String(writes() - before));`);
  expect(lineNumbers(stderr)).toEqual(Array.from({ length: 200 }, (_, n) => n));
  // One line a write would be 200; the stdout write itself is read after the count.
  expect(Number(stdout)).toBeLessThanOrEqual(5);
});

it('loses no line when the process exits right after logging', async () => {
  const { stderr } = await runChild(`
for (let n = 0; n < 1000; n += 1) logger.info({ n }, 'file archived');
process.exit(0);`);
  expect(lineNumbers(stderr)).toEqual(Array.from({ length: 1000 }, (_, n) => n));
});
