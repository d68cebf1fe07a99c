/**
 * Giving a burst's heap back once the daemon is quiet (issue 23). After a flood V8 keeps much of
 * the heap it grew to: its memory reducer gave back ~20 MB between 15 and 30 s after the flood
 * settled, then nothing more (108.8 MB RSS at 30 and 60 s, ~90 MB before the flood; BENCHMARKS.md,
 * "Issue 23"). Every CHECK_MS this looks at the CPU time the process spent since the last look;
 * after QUIET_CHECKS quiet looks in a row (under QUIET_CPU_SHARE of a core) while V8 holds more than
 * SLACK_BYTES of heap beyond what is used, it runs one full garbage collection, then none until the
 * heap has grown by SLACK_BYTES again. A busy process never gets one (its own GCs do the work).
 * `--expose-gc` is not on the launch line: gc is exposed at run time, as jest's leak detector does
 * (v8.setFlagsFromString, then a new context, the only one that sees it).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../log.js';

const CHECK_MS = 5000;
const QUIET_CHECKS = 2;
const QUIET_CPU_SHARE = 0.05;
const SLACK_BYTES = 8 * 1024 * 1024;
const MB = 1024 * 1024;

/** Starts the checks; returns what stops them. */
export function startHeapReturn(logger: Logger): () => void {
  let gc: (() => void) | undefined;
  let lastCpu = process.cpuUsage();
  let quietChecks = 0;
  /** heapTotal after the last collection of ours: the next waits for growth beyond it. */
  let heapAfterLast = 0;
  const check = (): void => {
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    quietChecks = (cpu.user + cpu.system) / 1000 < QUIET_CPU_SHARE * CHECK_MS ? quietChecks + 1 : 0;
    if (quietChecks < QUIET_CHECKS) return;
    const before = process.memoryUsage();
    if (before.heapTotal - before.heapUsed < SLACK_BYTES || before.heapTotal < heapAfterLast + SLACK_BYTES) return;
    gc ??= runtimeGc();
    gc();
    const after = process.memoryUsage();
    heapAfterLast = after.heapTotal;
    quietChecks = 0;
    lastCpu = process.cpuUsage();
    const figures = { heapTotalMb: [before.heapTotal, after.heapTotal].map((bytes) => Math.round(bytes / MB)), rssMb: Math.round(before.rss / MB) };
    logger.info(figures, 'quiet after work: heap collected and given back');
  };
  const timer = setInterval(check, CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

function runtimeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
