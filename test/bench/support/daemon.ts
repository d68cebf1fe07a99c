/**
 * Daemons under benchmark. `spawnDaemon` runs the built binary (`node <shebang flags> dist/src/main.js start`) as
 * its own process, so its RSS is its own; `startInProcess` runs `startDaemon` in this process, for
 * scenarios compared with references that also run here. Both get a private spool, key prefix and
 * a config file, point at a sandbox API on loopback, and log to a file under bench-reports/logs/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig, PACKAGE_ROOT } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { createLogger, type Logger } from '../../../src/log.js';
import { startDaemon, type DaemonHandle, type Role } from '../../../src/runtime/start.js';
import { isBenchTracing, tracingEnv } from './otlp-sink.js';
import { daemonRedisUrl } from './redis.js';
import { assignmentsOf, binLaunch as launchOf } from '../../support/process.js';

export const BIN = join(PACKAGE_ROOT, 'dist', 'src', 'main.js');

/**
 * The daemon binary `spawnDaemon` runs: this tree's build, or another commit's while `--compare`
 * runs a scenario on it (the scenario's code, inputs and checks stay this tree's; only the daemon
 * under measure changes).
 */
let daemonBin = BIN;
/** Names the build in BENCH_DAEMON_NODE_ARGS' `{build}` (e.g. a --cpu-prof-dir per build). */
let daemonTag = 'this';
export function useDaemonBin(bin: string, tag = 'this'): void {
  daemonBin = bin;
  daemonTag = tag.replace(/[^\w.-]/g, '_');
}

/** The bin's launch line (test/support/process.ts), of the build under measure by default. */
export function binLaunch(bin = daemonBin): { env: Record<string, string>; nodeFlags: string[] } {
  return launchOf(bin);
}

export interface DaemonSetup {
  redisUrl: string;
  prefix: string;
  apiUrl: string;
  carrierKey: string;
  /** Settings layered over the bench defaults as a --config file. */
  settings?: Record<string, unknown>;
  /** Extra environment (CARRIER_SYNC_* variables). */
  env?: Record<string, string>;
  /** An existing spool; default a new temporary one. */
  spool?: string;
  logFile: string;
  logLevel?: string;
  /** 'warn': the daemon logs at its level, but only warnings and worse reach the log file. */
  logFileLevel?: 'all' | 'warn';
  /** Node flags for this daemon, after BENCH_DAEMON_NODE_ARGS' (e.g. loopDelayProbe's). */
  nodeArgs?: string[];
}

/**
 * The event loop's delay in a spawned daemon (support/loop-delay-probe.ts): its node flags and
 * environment for DaemonSetup, `open()` / `close()` around the window measured (SIGUSR2 each).
 */
export function loopDelayProbe(file: string): {
  nodeArgs: string[];
  env: Record<string, string>;
  open(pid: number): void;
  close(pid: number): Promise<{ p50Ms: number; p99Ms: number; maxMs: number; count: number }>;
} {
  return {
    nodeArgs: ['--import', new URL('./loop-delay-probe.js', import.meta.url).href],
    env: { BENCH_LOOP_DELAY_FILE: file },
    open: (pid) => process.kill(pid, 'SIGUSR2'),
    async close(pid) {
      await rm(file, { force: true });
      process.kill(pid, 'SIGUSR2');
      for (let i = 0; i < 200; i += 1) {
        const text = await readFile(file, 'utf8').catch(() => null);
        if (text !== null && text !== '') return JSON.parse(text) as { p50Ms: number; p99Ms: number; maxMs: number; count: number };
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`the daemon's loop-delay probe wrote nothing to ${file}`);
    },
  };
}

/** Schedules off (no scheduler role anyway), short backoff so retries do not dominate a run. */
const BENCH_DEFAULTS: Record<string, unknown> = {
  spool: { writeStableMs: 100, rescanIntervalMs: 30_000 },
  delivery: { backoffMs: 100 },
  schedules: {
    rescan: { pattern: null, tz: 'UTC' },
    webhookReconcile: { pattern: null, tz: 'UTC' },
    deadLetterSummary: { pattern: null, tz: 'UTC' },
    // journeyCompact is left out: builds before it refuse the key (--compare runs them on this config).
  },
};

interface Prepared {
  spool: string;
  configPath: string;
  env: Record<string, string>;
  /** Removes the config file's folder, and the spool when it was made here. */
  cleanup(): Promise<void>;
}

async function prepare(setup: DaemonSetup): Promise<Prepared> {
  const spool = setup.spool ?? (await mkdtemp(join(tmpdir(), 'cs-bench-spool-')));
  const configDir = await mkdtemp(join(tmpdir(), 'cs-bench-config-'));
  const configPath = join(configDir, 'config.yaml');
  await writeFile(configPath, stringify(merge(BENCH_DEFAULTS, setup.settings ?? {})));
  const env: Record<string, string> = {
    REDIS_URL: setup.redisUrl,
    CARRIER_SYNC_PREFIX: setup.prefix,
    CARRIER_SYNC_SPOOL_DIR: spool,
    CARRIER_SYNC_API_URL: setup.apiUrl,
    CARRIER_SYNC_CARRIER_KEY: setup.carrierKey,
    CARRIER_SYNC_HTTP_PORT: '0',
    LOG_LEVEL: setup.logLevel ?? 'info',
    ...setup.env,
  };
  const cleanup = async (): Promise<void> => {
    await rm(configDir, { recursive: true, force: true });
    if (setup.spool === undefined) await rm(spool, { recursive: true, force: true });
  };
  return { spool, configPath, env, cleanup };
}

export interface SpawnedDaemon {
  child: ChildProcess;
  pid: number;
  spool: string;
  /** Resolves when the daemon logged `carrier-sync started`. */
  ready: Promise<void>;
  /** Log lines at error level or above. */
  errorCount(): number;
  lastLines(): string[];
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  stop(graceMs?: number): Promise<void>;
}

export async function spawnDaemon(setup: DaemonSetup, roles: readonly Role[]): Promise<SpawnedDaemon> {
  const { spool, configPath, env: own, cleanup } = await prepare(setup);
  // BENCH_TRACING=1: tracing on, every item sampled, towards a sink in this process (support/otlp-sink.ts).
  // BENCH_TRACING_ONLY=this: only this tree's daemons trace, so `--compare HEAD` measures tracing
  // on against tracing off of the same code (no other change between the builds).
  const isTraced = isBenchTracing() && (process.env['BENCH_TRACING_ONLY'] === undefined || process.env['BENCH_TRACING_ONLY'] === daemonTag);
  const traced = isTraced ? { ...own, ...(await tracingEnv()) } : own;
  // BENCH_DAEMON_ENV_THIS="NAME=value …": settings for this tree's daemons only, to compare a setting
  // against the same code without it (`--compare HEAD`), e.g. OTEL_BSP_MAX_EXPORT_BATCH_SIZE=32.
  const envThis = daemonTag === 'this' ? assignmentsOf(process.env['BENCH_DAEMON_ENV_THIS'] ?? '') : {};
  const env = { ...traced, ...envThis, REDIS_URL: daemonRedisUrl(setup.redisUrl, daemonTag) };
  await mkdir(join(setup.logFile, '..'), { recursive: true });
  const log = createWriteStream(setup.logFile, { flags: 'a' });
  // BENCH_DAEMON_NODE_ARGS: node flags for every spawned daemon, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof/{build}"
  // ({build}: 'this', or the ref under --compare).
  const nodeArgs = (process.env['BENCH_DAEMON_NODE_ARGS'] ?? '')
    .split(' ')
    .filter(Boolean)
    .map((arg) => arg.replaceAll('{build}', daemonTag));
  // BENCH_DAEMON_SHEBANG_FLAGS=0 leaves the shebang's flags and environment out (to compare with and without them).
  const launch = process.env['BENCH_DAEMON_SHEBANG_FLAGS'] === '0' ? { env: {}, nodeFlags: [] } : binLaunch();
  const child = spawn(
    process.execPath,
    [...launch.nodeFlags, ...nodeArgs, ...(setup.nodeArgs ?? []), daemonBin, 'start', '--roles', roles.join(','), '--config', configPath],
    {
      cwd: tmpdir(),
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? tmpdir(), TZ: 'UTC', LANG: 'C.UTF-8', ...launch.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // The daemon writes nothing on stdout; node flags such as --trace-gc do: keep it with the log.
  child.stdout?.on('data', (chunk: Buffer) => log.write(chunk));
  let errors = 0;
  const tail: string[] = [];
  let onStarted: () => void = () => {};
  let onFailed: (error: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    onStarted = resolve;
    onFailed = reject;
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  void exited.then(() => onFailed(new Error(`daemon exited before it was ready:\n${tail.join('\n')}`)));
  let partial = '';
  const isAll = setup.logFileLevel !== 'warn';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    if (isAll) log.write(chunk);
    partial += chunk;
    let at: number;
    while ((at = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, at);
      partial = partial.slice(at + 1);
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (!isAll && !/"level":[1-3]\d,/.test(line)) log.write(`${line}\n`);
      if (line.includes('"level":50') || line.includes('"level":60')) errors += 1;
      if (line.includes('"msg":"carrier-sync started"')) onStarted();
    }
  });
  const timer = setTimeout(() => onFailed(new Error(`daemon not ready in 30 s:\n${tail.join('\n')}`)), 30_000);
  timer.unref();
  void ready.finally(() => clearTimeout(timer)).catch(() => undefined);
  return {
    child,
    pid: child.pid ?? -1,
    spool,
    ready,
    errorCount: () => errors,
    lastLines: () => [...tail],
    async stop(graceMs = 30_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(killer);
      }
      if (!log.closed) await new Promise<void>((resolve) => log.end(() => resolve()));
      await cleanup();
    },
  };
}

export interface InProcessDaemon {
  config: Readonly<Config>;
  spool: string;
  daemon: DaemonHandle;
  logger: Logger;
  stop(): Promise<void>;
}

/** The config a daemon of this setup would run with (the config file is read, then removed). */
export async function loadBenchConfig(setup: DaemonSetup): Promise<{ config: Readonly<Config>; spool: string }> {
  const { spool, configPath, env } = await prepare({ ...setup, spool: setup.spool ?? join(tmpdir(), 'cs-bench-unused-spool') });
  try {
    return { config: loadConfig({ configPath, env }), spool };
  } finally {
    await rm(join(configPath, '..'), { recursive: true, force: true });
  }
}

export async function startInProcess(setup: DaemonSetup, roles: readonly Role[]): Promise<InProcessDaemon> {
  const { spool, configPath, env, cleanup } = await prepare(setup);
  const config = loadConfig({ configPath, env });
  await mkdir(join(setup.logFile, '..'), { recursive: true });
  const stream: WriteStream = createWriteStream(setup.logFile, { flags: 'a' });
  const logger = createLogger({ level: config.log.level, destination: stream });
  const daemon = startDaemon(config, roles, logger);
  await daemon.ready;
  return {
    config,
    spool,
    daemon,
    logger,
    async stop() {
      await daemon.stop();
      logger.flush();
      await new Promise<void>((resolve) => stream.end(() => resolve()));
      await cleanup();
    },
  };
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] =
      value !== null && typeof value === 'object' && !Array.isArray(value) && current !== null && typeof current === 'object'
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}
