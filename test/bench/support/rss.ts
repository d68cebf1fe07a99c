/**
 * Samples a process's resident set size at a fixed interval: /proc/<pid>/status (VmRSS) for
 * another process, process.memoryUsage().rss for this one. Keeps every sample, so a report can show
 * the peak, the end, and the slope over a soak.
 */
import { readFile } from 'node:fs/promises';
import { sleep } from './wait.js';

export interface RssSample {
  /** Epoch ms. */
  at: number;
  rssBytes: number;
}

export interface RssSampler {
  samples(): readonly RssSample[];
  peakBytes(): number;
  /** Takes one sample now (also used before stop, so the end is recorded). */
  sampleNow(): Promise<RssSample | null>;
  stop(): Promise<void>;
}

export async function readRss(pid: number): Promise<number | null> {
  if (pid === process.pid) return process.memoryUsage().rss;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

/** The process's RSS high-water mark since it started (/proc/<pid>/status VmHWM): the true peak, between samples too. */
export async function readRssPeak(pid: number): Promise<number | null> {
  try {
    const kb = /VmHWM:\s+(\d+)\s+kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

export function sampleRss(pid: number, intervalMs = 250): RssSampler {
  const samples: RssSample[] = [];
  let peak = 0;
  const take = async (): Promise<RssSample | null> => {
    const rssBytes = await readRss(pid);
    if (rssBytes === null) return null;
    const sample = { at: Date.now(), rssBytes };
    samples.push(sample);
    peak = Math.max(peak, rssBytes);
    return sample;
  };
  void take();
  const timer = setInterval(() => void take(), intervalMs);
  timer.unref();
  return {
    samples: () => samples,
    peakBytes: () => peak,
    sampleNow: take,
    async stop() {
      clearInterval(timer);
      await take();
    },
  };
}

/** Least-squares slope of (at, value) in value units per minute; 0 with fewer than two points. */
export function slopePerMinute(points: ReadonlyArray<{ at: number; value: number }>): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const meanT = points.reduce((s, p) => s + p.at, 0) / n;
  const meanV = points.reduce((s, p) => s + p.value, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.at - meanT) * (p.value - meanV);
    den += (p.at - meanT) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60_000;
}

export const MB = 1024 * 1024;

/**
 * A daemon at rest: once V8's memory reducer has had its looks after start-up (8 s after start-up's
 * last mark-compact, and 8 s after that when start-up's allocations still counted: ~10 and ~16 s
 * here). Before it, a reading falls on either side of it, which moves a figure by ~10–20 MB from run
 * to run (BENCHMARKS.md, issue 29; issue 46: the memory bench read its idle figure right after
 * start-up, 114 MB against 93 MB at rest).
 */
export const AT_REST_AFTER_READY_MS = 24_000;
const WINDOW_MS = 4_000;

/** The median RSS (MB) of `pid` over a 4 s window starting `fromMs` after `readyAt` (epoch ms). */
export async function windowRssMb(pid: number, fromMs: number, readyAt: number): Promise<number> {
  await sleep(Math.max(0, readyAt + fromMs - Date.now()));
  const rss = sampleRss(pid, 250);
  await sleep(WINDOW_MS);
  await rss.stop();
  const sorted = rss
    .samples()
    .map((s) => s.rssBytes)
    .sort((a, b) => a - b);
  return (sorted[Math.floor(sorted.length / 2)] ?? Number.NaN) / MB;
}
