/**
 * Runs the BUILT binary (`node dist/src/main.js …`) as a real process, for the e2e tests, the way
 * users launch it: with the node flags and the environment on the bin's shebang (binLaunch). The
 * build itself is test/support/global-build.ts. Spawned processes get a small, explicit environment
 * (not the test runner's), so a CARRIER_SYNC_* variable in the developer's shell cannot leak in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BIN = join(new URL('../..', import.meta.url).pathname, 'dist', 'src', 'main.js');

/**
 * The environment and node flags on a bin's shebang (`#!/usr/bin/env -S MALLOC_TRIM_THRESHOLD_=…
 * node --max-semi-space-size=4 …`): users launch the daemon with them (the bin, npm start, the image
 * and the unit all carry them, test/unit/packaging.test.ts), so a daemon under test or benchmark
 * runs with them too, on the test's own node binary. A build whose shebang has none runs without.
 */
export function binLaunch(bin: string): { env: Record<string, string>; nodeFlags: string[] } {
  const shebang = readFileSync(bin, 'utf8').split('\n', 1)[0] ?? '';
  const match = /^#!\/usr\/bin\/env -S((?: [A-Z_]+=\S+)*) node\b(.*)$/.exec(shebang);
  return { env: assignmentsOf(match?.[1] ?? ''), nodeFlags: wordsOf(match?.[2] ?? '') };
}

/** `NAME=value NAME2=value2` (words without `=` ignored) → an environment. */
export function assignmentsOf(text: string): Record<string, string> {
  const pairs = wordsOf(text).filter((word) => word.includes('='));
  return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

const wordsOf = (text: string): string[] => text.trim().split(/\s+/).filter(Boolean);

/** BIN's launch line, read once (the build exists by then: global-build.ts runs first). */
let launch: ReturnType<typeof binLaunch> | undefined;
const ownLaunch = (): ReturnType<typeof binLaunch> => (launch ??= binLaunch(BIN));

/** `node`'s arguments to run BIN with `args` as the bin's shebang would. */
export function binArgv(args: readonly string[]): string[] {
  return [...ownLaunch().nodeFlags, BIN, ...args];
}

/** The environment the bin's shebang sets, for a process spawned with binArgv. */
export function binEnv(): Record<string, string> {
  return ownLaunch().env;
}

export type ProcessEnv = Record<string, string | undefined>;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env: ProcessEnv;
  /** Written to stdin, which is then closed (stdin is always closed: no command may wait on it). */
  input?: string | Buffer;
  /** The process is killed (SIGKILL) and the call rejects after this long. Default 20 s. */
  timeoutMs?: number;
  cwd?: string;
}

/** What every spawned process gets, under the test's own variables. */
function envOf(env: ProcessEnv): NodeJS.ProcessEnv {
  const base: ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'] ?? tmpdir(), TMPDIR: tmpdir(), TZ: 'UTC', LANG: 'C.UTF-8', ...binEnv() };
  const merged: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries({ ...base, ...env })) if (value !== undefined) merged[name] = value;
  return merged;
}

/** Runs one command to its end. */
export function runCli(args: readonly string[], options: RunOptions): Promise<CliResult> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, binArgv(args), { cwd: options.cwd ?? tmpdir(), env: envOf(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`carrier-sync ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** One pino line of the daemon's stderr. */
export interface LogLine {
  level?: number;
  time?: number;
  msg?: string;
  [field: string]: unknown;
}

export interface DaemonProcess {
  child: ChildProcess;
  stdoutLines: string[];
  /** Raw stderr lines (pino JSON, or anything else the process wrote). */
  stderrLines: string[];
  /** The stderr lines that parse as JSON objects. */
  logs(): LogLine[];
  /** Resolves with the first log line (already written or still to come) matching `predicate`; rejects on timeout or exit. */
  waitForLog(predicate: (line: LogLine) => boolean, options?: { timeoutMs?: number; what?: string }): Promise<LogLine>;
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Is the process still running? */
  isRunning(): boolean;
  /** The last lines of stderr, for failure messages. */
  tail(lines?: number): string;
}

const running = new Set<DaemonProcess>();

export interface SpawnOptions {
  /** Default `['start']`; put `--config <path>` here. */
  args?: readonly string[];
  cwd?: string;
  /** Another program than the built binary (e.g. `npm start`): its file; `args` are then its arguments. */
  file?: string;
  /** In a process group of its own (a terminal's session): the test can signal the whole group. */
  isOwnGroup?: boolean;
}

/** Starts a long-running command (the daemon by default). Wait for `carrier-sync started` with waitForLog. */
export function spawnDaemon(env: ProcessEnv, options: SpawnOptions = {}): DaemonProcess {
  const args = options.args ?? ['start'];
  const [file, argv] = options.file === undefined ? [process.execPath, binArgv(args)] : [options.file, args];
  const child = spawn(file, argv, { cwd: options.cwd ?? tmpdir(), env: envOf(env), stdio: ['ignore', 'pipe', 'pipe'], detached: options.isOwnGroup === true });
  const stdoutLines: string[] = [];
  const stderrLines: string[] = [];
  const parsed: LogLine[] = [];
  const listeners = new Set<(line: LogLine | null) => void>();
  let isRunning = true;

  const splitter = (sink: string[], onLine?: (line: string) => void): ((chunk: string) => void) => {
    let partial = '';
    return (chunk) => {
      partial += chunk;
      let at: number;
      while ((at = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, at);
        partial = partial.slice(at + 1);
        sink.push(line);
        onLine?.(line);
      }
    };
  };
  child.stdout?.setEncoding('utf8').on('data', splitter(stdoutLines));
  child.stderr?.setEncoding('utf8').on(
    'data',
    splitter(stderrLines, (raw) => {
      let line: unknown;
      try {
        line = JSON.parse(raw);
      } catch {
        return;
      }
      if (line === null || typeof line !== 'object' || Array.isArray(line)) return;
      parsed.push(line as LogLine);
      for (const listener of listeners) listener(line as LogLine);
    }),
  );

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => {
      isRunning = false;
      running.delete(handle);
      for (const listener of listeners) listener(null);
      resolve({ code, signal });
    });
  });

  const handle: DaemonProcess = {
    child,
    stdoutLines,
    stderrLines,
    logs: () => [...parsed],
    waitForLog(predicate, waitOptions = {}) {
      const timeoutMs = waitOptions.timeoutMs ?? 20_000;
      const what = waitOptions.what ?? 'a log line';
      const found = parsed.find(predicate);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(listener);
        };
        const listener = (line: LogLine | null): void => {
          if (line === null) {
            done();
            reject(new Error(`process exited while waiting for ${what}\n${handle.tail()}`));
          } else if (predicate(line)) {
            done();
            resolve(line);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${handle.tail()}`));
        }, timeoutMs);
        if (!isRunning) listener(null);
        else listeners.add(listener);
      });
    },
    kill(signal = 'SIGTERM') {
      if (isRunning) child.kill(signal);
    },
    exited,
    isRunning: () => isRunning,
    tail: (lines = 30) => stderrLines.slice(-lines).join('\n'),
  };
  running.add(handle);
  return handle;
}

/** SIGKILLs every daemon still running (for afterEach/afterAll), and waits for them to go. */
export async function killAllDaemons(): Promise<void> {
  const left = [...running];
  for (const daemon of left) daemon.kill('SIGKILL');
  await Promise.all(left.map((daemon) => daemon.exited));
}

/** Resolves once the daemon logged `carrier-sync started`. */
export async function waitUntilStarted(daemon: DaemonProcess, timeoutMs = 20_000): Promise<void> {
  await daemon.waitForLog((line) => line.msg === 'carrier-sync started', { timeoutMs, what: "'carrier-sync started'" });
}
