/**
 * A check's CPU budget, read on the check thread's own CPU clock.
 * Node 20 has no API for another thread's CPU time (process.threadCpuUsage and Worker#cpuUsage
 * came in later majors), and the XML and CSV parsers never yield, so a busy thread cannot look at
 * its clock itself. Linux keeps each thread's clock in /proc/self/task/<tid>/stat: a thread notes
 * its tid and that clock when it begins a file (check-board.ts), and the event loop reads the clock
 * again only once the file could have spent its budget (budgetMs of wall time after it was handed
 * over), so a file that ends sooner costs no read. A file on a machine that other work keeps busy
 * gets its whole budget of CPU, not of wall time.
 * Without that clock (another OS, /proc not mounted) the budget is wall time from the file's
 * beginning, which bounds its CPU time from above. Either way a check ends after WALL_CEILING
 * budgets of wall time: a starved thread does not hold its slot for ever.
 * What the thread's clock does not count: V8's garbage-collection helper threads, which work for
 * every isolate of the process (a check near its memory budget makes them busy; BENCHMARKS.md).
 */
import { readFileSync, readlinkSync } from 'node:fs';

/** Linux reports thread times in USER_HZ ticks, 100 a second on every architecture Node runs on. */
const MS_PER_TICK = 10;
const WALL_CEILING = 10;

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

/** How a thread began its file: its OS thread id, its CPU clock and the wall clock (ms) then. */
export interface Begun {
  tid: number | null;
  startCpuMs: number | null;
  startWallMs: number;
}

/** Whether the file begun so has spent `budgetMs`: of its thread's CPU, or of wall time without that clock. */
export function isOverBudget(begun: Begun, budgetMs: number, nowMs = Date.now()): boolean {
  const wallMs = nowMs - begun.startWallMs;
  if (wallMs >= WALL_CEILING * budgetMs) return true;
  const nowCpu = begun.tid === null || begun.startCpuMs === null ? null : threadCpuMs(begun.tid);
  return (nowCpu === null || begun.startCpuMs === null ? wallMs : nowCpu - begun.startCpuMs) >= budgetMs;
}
