import { PassThrough } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { routeConsoleToLog } from '../../src/runtime/console-to-log.js';

let restore: (() => void) | undefined;
afterEach(() => restore?.());

function capture(level: string): { lines: () => Array<Record<string, unknown>>; restore: () => void } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  restore = routeConsoleToLog(createLogger({ level, destination: stream }));
  return {
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    restore: restore,
  };
}

it("a library's console.warn becomes a warn log line, and BullMQ's per-connection eviction warning goes to debug", () => {
  const log = capture('info');
  console.warn('It is highly recommended to use a minimum Redis version of %s', '6.2.0');
  console.warn('IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"');
  expect(log.lines()).toEqual([
    expect.objectContaining({ level: 40, mod: 'console', msg: 'It is highly recommended to use a minimum Redis version of 6.2.0' }),
  ]);
});

it('an Error given to console.error is logged whole: type, stack and cause', () => {
  const log = capture('info');
  console.error(new Error('outer', { cause: new Error('inner') }));
  const [line] = log.lines();
  expect(line).toMatchObject({ level: 50, mod: 'console', msg: 'outer' });
  const err = line?.['err'] as { type: string; stack: string };
  expect(err.type).toBe('Error');
  expect(err.stack).toMatch(/^Error: outer\n\s+at [\s\S]*caused by: Error: inner/);
});

it("Node's process warnings become log lines; restoring puts console back", async () => {
  const log = capture('info');
  const warned = new Promise((resolve) => process.once('warning', resolve));
  process.emitWarning('something odd', 'OddWarning');
  await warned;
  expect(log.lines()).toEqual([expect.objectContaining({ level: 40, mod: 'node', msg: 'something odd' })]);
  const routed = console.warn;
  log.restore();
  restore = undefined;
  expect(console.warn).not.toBe(routed);
});
