/** Waiting on a condition with a deadline (never a bare sleep), and small timing helpers. */
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

export async function waitFor(check: () => boolean | Promise<boolean>, options: { timeoutMs: number; what: string; intervalMs?: number }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await sleep(options.intervalMs ?? 25);
  }
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export const round = (value: number, digits = 1): number => Math.round(value * 10 ** digits) / 10 ** digits;
