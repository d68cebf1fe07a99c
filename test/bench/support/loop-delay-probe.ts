/**
 * Loaded into a spawned daemon with `--import` (DaemonSetup.nodeArgs, loopDelayProbe below): the
 * event loop's delay, as perf_hooks' monitorEventLoopDelay sees it (a 10 ms timer's lateness), over
 * a window the bench opens and closes with SIGUSR2. The first signal resets and starts the histogram;
 * the second writes { p50Ms, p99Ms, maxMs, count } to BENCH_LOOP_DELAY_FILE. Bench-only: the daemon
 * itself has no SIGUSR2 handler, and works the same with the probe or without it.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const out = process.env['BENCH_LOOP_DELAY_FILE'];
if (out !== undefined && out !== '') {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  let isOpen = false;
  process.on('SIGUSR2', () => {
    if (!isOpen) {
      histogram.reset();
      histogram.enable();
      isOpen = true;
      return;
    }
    histogram.disable();
    isOpen = false;
    const ms = (ns: number): number => Math.round(ns / 1e4) / 100;
    const figures = { p50Ms: ms(histogram.percentile(50)), p99Ms: ms(histogram.percentile(99)), maxMs: ms(histogram.max), count: histogram.count };
    writeFileSync(out, JSON.stringify(figures));
  });
}
