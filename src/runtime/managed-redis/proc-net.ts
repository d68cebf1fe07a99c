/**
 * Who holds which TCP socket, read from Linux's /proc (synchronously: these run on exit paths and in
 * a start that failed). `ownLocalPorts`: the local ports of this process's TCP connections, every
 * thread's (the managed redis-server's at-once stop tells our connections from another client's).
 * `listenerOf`: the process listening on a port (a second `start` says who holds the ops port).
 * Where /proc cannot be read (another system, a hardened container), both answer null.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

interface TcpRow {
  localPort: number;
  isListening: boolean;
  inode: string;
}

/** The rows of /proc/<pid>/net/tcp and tcp6 (the network namespace's sockets). */
function tcpRows(): TcpRow[] {
  const rows: TcpRow[] = [];
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const local = fields[1]!;
      rows.push({ localPort: parseInt(local.slice(local.lastIndexOf(':') + 1), 16), isListening: fields[3] === '0A', inode: fields[9]! });
    }
  }
  return rows;
}

/** The socket inodes among `pid`'s open files (`socket:[123]`); null when they cannot be read. */
function socketInodesOf(pid: number | 'self'): Set<string> | null {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  const inodes = new Set<string>();
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match !== null) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** The local ports of this process's TCP sockets, or null when /proc cannot tell. */
export function ownLocalPorts(): Set<number> | null {
  const inodes = socketInodesOf('self');
  if (inodes === null) return null;
  const rows = tcpRows();
  if (rows.length === 0) return null;
  return new Set(rows.filter((row) => inodes.has(row.inode)).map((row) => row.localPort));
}

export interface PortHolder {
  pid: number;
  /** Its command line, words joined by spaces (cut to 200 characters). */
  command: string;
}

/** The process listening on TCP `port` (in this network namespace), or null when none is found. */
export function listenerOf(port: number): PortHolder | null {
  const inodes = new Set(
    tcpRows()
      .filter((row) => row.isListening && row.localPort === port)
      .map((row) => row.inode),
  );
  if (inodes.size === 0) return null;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const name of pids) {
    const pid = Number(name);
    if (pid === process.pid) continue;
    const own = socketInodesOf(pid);
    if (own === null || ![...inodes].some((inode) => own.has(inode))) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').slice(0, 200);
    } catch {
      // gone meanwhile
    }
    return { pid, command };
  }
  return null;
}
