/**
 * CPU time of a process: user + system seconds from /proc/<pid>/stat (fields 14 and 15, in clock
 * ticks of 1/100 s on Linux), or process.cpuUsage() for this process. Read at two moments, the
 * difference is what the process spent between them.
 */
import { readFile } from 'node:fs/promises';

/** Linux USER_HZ; `getconf CLK_TCK` is 100 on every mainstream kernel build. */
const TICKS_PER_SECOND = 100;

export async function cpuSeconds(pid: number): Promise<number> {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`cannot read the CPU time of pid ${pid} from /proc`);
  return (utime + stime) / TICKS_PER_SECOND;
}

/**
 * Read and write system calls a process made so far (/proc/<pid>/io syscr, syscw): sockets, pipes
 * and files alike. Between two readings, a proxy for the round trips a daemon made (each Redis or
 * API request is at least one write, each reply at least one read).
 */
export async function ioCalls(pid: number): Promise<{ reads: number; writes: number }> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}
