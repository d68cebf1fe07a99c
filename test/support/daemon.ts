/**
 * Runs the daemon in this test process against the test Redis (a private key prefix) and a
 * sandbox API on loopback, with a temporary spool.
 */
import { Writable } from 'node:stream';
import type { Queue } from 'bullmq';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/log.js';
import { startDaemon, type DaemonHandle, type Role } from '../../src/runtime/start.js';
import { startSandbox, type SandboxHandle, type SandboxOptions } from '../../src/sandbox/server.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from './redis.js';

export interface TestDaemon {
  config: Readonly<Config>;
  sandbox: SandboxHandle;
  spool: string;
  prefix: string;
  daemon: DaemonHandle;
  stop(): Promise<void>;
  /** Stops the daemon and starts it again on the same Redis, spool and sandbox. */
  restart(): Promise<void>;
}

export interface TestDaemonOptions {
  roles?: Role[];
  sandbox?: SandboxOptions;
  /** Settings layered as a --config file. */
  settings?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Where the daemon's log lines go (parsed JSON), at `info` unless LOG_LEVEL says otherwise; silent when not given. */
  logLines?: Array<Record<string, unknown>>;
}

export async function startTestDaemon(options: TestDaemonOptions = {}): Promise<TestDaemon> {
  const sandbox = await startSandbox({ port: 0, ...options.sandbox });
  const spool = await mkdtemp(join(tmpdir(), 'cs-spool-'));
  const prefix = uniquePrefix('d');
  const configPath = join(spool, '..', `${prefix}.yaml`);
  await writeFile(
    configPath,
    stringify(
      merge(
        {
          spool: { writeStableMs: 100, rescanIntervalMs: 1000 },
          // One thread: this daemon runs src/ in the test process, the delivery thread would run
          // dist/'s build; the spawned daemons of test/e2e run it (delivery-thread.test.ts).
          delivery: { backoffMs: 50, notFoundAttempts: 2, maxAttempts: 4, lockMs: 5000, concurrency: 4, thread: 'off' },
          schedules: {
            rescan: { pattern: null, tz: 'UTC' },
            webhookReconcile: { pattern: null, tz: 'UTC' },
            deadLetterSummary: { pattern: null, tz: 'UTC' },
            journeyCompact: { pattern: null, tz: 'UTC' },
          },
        },
        options.settings ?? {},
      ),
    ),
  );
  const [carrierKey] = Object.values(sandbox.keys.carriers);
  const config = loadConfig({
    configPath,
    env: {
      REDIS_URL: testRedisUrl(),
      CARRIER_SYNC_PREFIX: prefix,
      CARRIER_SYNC_SPOOL_DIR: spool,
      CARRIER_SYNC_API_URL: sandbox.url,
      CARRIER_SYNC_CARRIER_KEY: carrierKey ?? '',
      CARRIER_SYNC_HTTP_PORT: '0',
      LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
      ...options.env,
    },
  });
  const roles = options.roles ?? ['watcher', 'worker'];
  const lines = options.logLines;
  const logger =
    lines === undefined
      ? createLogger({ level: config.log.level })
      : createLogger({
          level: config.log.level === 'silent' ? 'info' : config.log.level,
          destination: new Writable({
            write: (chunk: Buffer, _encoding, done) => {
              for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
              done();
            },
          }),
        });
  const handle: TestDaemon = {
    config,
    sandbox,
    spool,
    prefix,
    daemon: startDaemon(config, roles, logger),
    async stop() {
      await handle.daemon.stop();
      await sandbox.close();
      await cleanupPrefix(prefix);
      await rm(spool, { recursive: true, force: true });
      await rm(configPath, { force: true });
    },
    async restart() {
      await handle.daemon.stop();
      handle.daemon = startDaemon(config, roles, logger);
      await handle.daemon.ready;
    },
  };
  await handle.daemon.ready;
  return handle;
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

/**
 * Runs the jobs waiting in `queue`'s delayed set now, as their backoff would later; returns how many
 * were waiting. A test that needs a retry to come after something else gives it a long backoff and
 * brings it forward with this once that something happened.
 */
export async function promoteDelayed(queue: Queue): Promise<number> {
  const delayed = await queue.getDelayed();
  // A job that moved on meanwhile (it ran) cannot be promoted: nothing to do for it.
  for (const job of delayed) await job.promote().catch(() => undefined);
  return delayed.length;
}
