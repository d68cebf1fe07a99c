/**
 * CPU time of a process: user + system seconds from /proc/<pid>/stat (fields 14 and 15, in clock
 * ticks of 1/100 s on Linux), or process.cpuUsage() for this process. Read at two moments, the
 * difference is what the process spent between them.
 */
import { readdir, readFile } from 'node:fs/promises';

/** Linux USER_HZ; `getconf CLK_TCK` is 100 on every mainstream kernel build. */
const TICKS_PER_SECOND = 100;

/** A /proc stat line's fields from the third on (fields[0] is field 3, the state). */
function statFields(stat: string): string[] {
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A process's user and system CPU so far, seconds (/proc/<pid>/stat fields 14 and 15). */
async function procCpu(pid: number): Promise<{ user: number; system: number }> {
  const fields = statFields(await readFile(`/proc/${pid}/stat`, 'utf8'));
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`cannot read the CPU time of pid ${pid} from /proc`);
  return { user: utime / TICKS_PER_SECOND, system: stime / TICKS_PER_SECOND };
}

export async function cpuSeconds(pid: number): Promise<number> {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  const { user, system } = await procCpu(pid);
  return user + system;
}

/** The system (kernel) part of a process's CPU time so far, seconds. */
export async function systemSeconds(pid: number): Promise<number> {
  return (await procCpu(pid)).system;
}

/**
 * Read and write system calls a process made so far (/proc/<pid>/io syscr, syscw): sockets, pipes,
 * files and eventfds alike. Between two readings, a rough proxy for the round trips a daemon made
 * (each Redis or API request is at least one write, each reply at least one read) — rough: an
 * eventfd wake-up is a write and a read too, and V8 schedules its garbage collector's steps on a
 * thread's event loop that way (with one V8 helper thread, ~20,000 a large drop on the delivery
 * thread alone: docs/benchmarks/log.md, the twelfth session). Redis' own counts (INFO
 * commandstats, MONITOR) are the round trips.
 */
export async function ioCalls(pid: number): Promise<{ reads: number; writes: number }> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}

/** One thread of a process: its id, its nice value and the CPU it spent so far (user + system s). */
export interface ThreadCpu {
  tid: number;
  nice: number;
  seconds: number;
}

/** Every thread of `pid` (/proc/<pid>/task/<tid>/stat: fields 14–15 CPU ticks, 19 nice); a thread that ended while read is left out. */
export async function threadCpu(pid: number): Promise<ThreadCpu[]> {
  const tids = await readdir(`/proc/${pid}/task`);
  const threads = await Promise.all(
    tids.map(async (tid): Promise<ThreadCpu | null> => {
      const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
      if (stat === null) return null;
      const fields = statFields(stat);
      return { tid: Number(tid), nice: Number(fields[16]), seconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
    }),
  );
  return threads.filter((t): t is ThreadCpu => t !== null);
}

/**
 * The CPU a daemon's threads spent between two readings, by what they are: its main thread (the
 * thread whose id is the pid), its delivery thread and the rest — V8's helper threads (parallel
 * and concurrent GC, optimising compiles) and libuv's pool. The delivery thread lowers its own
 * priority at start (src/runtime/delivery-thread/delivery-thread-entry.ts), so it is the busiest
 * thread niced below the main thread; null when no thread is (the delivery thread off, or its
 * priority kept).
 */
export function cpuByThread(pid: number, before: readonly ThreadCpu[], after: readonly ThreadCpu[]): { main: number; delivery: number | null; rest: number } {
  const spent = after.map((t) => ({ ...t, seconds: t.seconds - (before.find((b) => b.tid === t.tid)?.seconds ?? 0) }));
  const main = spent.find((t) => t.tid === pid);
  const niced = spent.filter((t) => main !== undefined && t.nice > main.nice).sort((a, b) => b.seconds - a.seconds)[0];
  const total = spent.reduce((sum, t) => sum + t.seconds, 0);
  const mainSeconds = main?.seconds ?? 0;
  const delivery = niced?.seconds ?? null;
  return { main: mainSeconds, delivery, rest: total - mainSeconds - (delivery ?? 0) };
}
