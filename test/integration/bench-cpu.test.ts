/**
 * The drop benches' CPU by thread (test/bench/support/cpu.ts), on this very process: a worker
 * thread that lowers its own priority, as the daemon's delivery thread does, and burns CPU is told
 * apart from the main thread and from the rest (V8's helpers, libuv's pool).
 */
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { cpuByThread, threadCpu } from '../bench/support/cpu.js';

/**
 * Burns `seconds` of its own thread's CPU after lowering its priority by 5, then posts its thread id
 * and stays until terminated (a listener on its port keeps it): a thread that ended with its script
 * was gone from /proc by the time the test read it, on a busy machine.
 */
const NICED_BURNER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync, readlinkSync } = require('node:fs');
const { getPriority, setPriority } = require('node:os');
const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
setPriority(tid, Math.min(19, getPriority(tid) + 5));
const ownCpu = () => {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const start = ownCpu();
let x = 0;
while (ownCpu() - start < workerData.seconds) for (let i = 0; i < 1e5; i += 1) x += Math.sqrt(i);
parentPort.on('message', () => {});
parentPort.postMessage({ tid, x });
`;

it('finds the niced thread that burned CPU, and counts the main thread and the rest apart', async () => {
  const before = await threadCpu(process.pid);
  const worker = new Worker(NICED_BURNER, { eval: true, workerData: { seconds: 0.3 } });
  const { tid } = await new Promise<{ tid: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const after = await threadCpu(process.pid);
  const split = cpuByThread(process.pid, before, after);
  await worker.terminate();

  const burner = after.find((t) => t.tid === tid);
  expect(burner?.nice).toBeGreaterThan(after.find((t) => t.tid === process.pid)?.nice ?? Infinity);
  // It burned at least 0.3 s of its own, and it is the thread counted as the delivery thread.
  expect(split.delivery).not.toBeNull();
  expect(split.delivery).toBeGreaterThanOrEqual(0.3);
  expect(split.delivery).toBe((burner?.seconds ?? 0) - (before.find((t) => t.tid === tid)?.seconds ?? 0));
  const total = after.reduce((sum, t) => sum + t.seconds, 0) - before.filter((b) => after.some((t) => t.tid === b.tid)).reduce((sum, t) => sum + t.seconds, 0);
  expect(split.main + (split.delivery ?? 0) + split.rest).toBeCloseTo(total, 5);
});

it('says no delivery thread when no thread is niced below the main one', () => {
  const pid = 100;
  const before = [
    { tid: 100, nice: 0, seconds: 1 },
    { tid: 101, nice: 0, seconds: 0.5 },
  ];
  const after = [
    { tid: 100, nice: 0, seconds: 3 },
    { tid: 101, nice: 0, seconds: 1.5 },
    { tid: 102, nice: 0, seconds: 0.25 },
  ];
  expect(cpuByThread(pid, before, after)).toEqual({ main: 2, delivery: null, rest: 1.25 });
});
