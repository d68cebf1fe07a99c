/**
 * A check's CPU budget, watched from the event loop on the check thread's own CPU clock.
 * Node 20 has no API for another thread's CPU time (process.threadCpuUsage and Worker#cpuUsage
 * came in later majors), and the XML and CSV parsers never yield, so a busy thread cannot look at
 * its clock itself. Linux keeps each thread's clock in /proc/self/task/<tid>/stat: the thread
 * sends its tid when it begins a file (check-task.ts), and the event loop reads that clock only
 * when the budget could be spent, i.e. after budgetMs of wall time (a file that ends sooner costs
 * no read), then again after what is left of it. So a file on a machine that other work keeps
 * busy gets its whole budget of CPU, not of wall time.
 * Without that clock (another OS, /proc not mounted) the budget is wall time, which bounds CPU
 * time from above. Either way a check ends after WALL_CEILING budgets of wall time: a starved
 * thread does not hold its slot for ever.
 */
import { readFileSync, readlinkSync } from 'node:fs';

/** Linux reports thread times in USER_HZ ticks, 100 a second on every architecture Node runs on. */
const MS_PER_TICK = 10;
const WALL_CEILING = 10;
/** Shortest wait before the clock is read again. */
const MIN_RECHECK_MS = 20;

/** CPU milliseconds (user + system) the thread `tid` of this process has used; null without the clock. */
export function threadCpuMs(tid: number): number | null {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'latin1');
    // Fields after the command name, which may hold spaces, end with ')': state is the first, utime the 12th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * MS_PER_TICK : null;
  } catch {
    return null;
  }
}

/** The calling thread's OS id, which its CPU clock is read by; null off Linux. */
export function ownThreadId(): number | null {
  try {
    // A link to <pid>/task/<tid>.
    const match = /\/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

/**
 * Calls `onOver` once the thread `tid` has used `budgetMs` of CPU since now (or, without its clock,
 * after `budgetMs` of wall time); returns the stop for a check that ended first.
 */
export function watchCpuBudget(tid: number | null, budgetMs: number, onOver: () => void): () => void {
  const startCpu = tid === null ? null : threadCpuMs(tid);
  const startWall = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const look = (): void => {
    const now = tid === null || startCpu === null ? null : threadCpuMs(tid);
    const spentMs = now === null || startCpu === null ? performance.now() - startWall : now - startCpu;
    if (spentMs >= budgetMs || performance.now() - startWall >= WALL_CEILING * budgetMs) onOver();
    else timer = setTimeout(look, Math.max(MIN_RECHECK_MS, budgetMs - spentMs));
  };
  timer = setTimeout(look, budgetMs);
  return () => clearTimeout(timer);
}
