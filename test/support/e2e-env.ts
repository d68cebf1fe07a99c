/**
 * The surroundings of a spawned carrier-sync: a sandbox API in this test process, a temporary
 * spool, a private Redis key prefix, a `--config` file, and the environment the binary gets.
 */
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Redis } from 'ioredis';
import { startSandbox, type SandboxHandle, type SandboxOptions } from '../../src/sandbox/server.js';
import { createKeys, keyIdOf } from '../../src/store/keys.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from './redis.js';
import { waitFor } from './wait.js';

export interface E2eEnv {
  sandbox: SandboxHandle;
  /** The first seed carrier's key (what the binary sends). */
  carrierKey: string;
  /** A temporary folder holding the spool (`spool/`) and the config file. */
  dir: string;
  spool: string;
  prefix: string;
  configPath: string;
  /** The environment for runCli / spawnDaemon. */
  env: Record<string, string>;
  /** `['--config', configPath, ...args]`. */
  args(...args: string[]): string[];
  close(): Promise<void>;
}

export interface E2eEnvOptions {
  sandbox?: SandboxOptions;
  /** Settings layered over the defaults below in the --config file. */
  settings?: Record<string, unknown>;
}

const DEFAULT_SETTINGS = {
  spool: { rescanIntervalMs: 1000 },
  // lockMs: a killed worker's jobs come back within a few seconds.
  delivery: { lockMs: 3000, notFoundAttempts: 2, maxAttempts: 4, concurrency: 4 },
  shutdown: { graceMs: 10_000 },
  schedules: {
    rescan: { pattern: null, tz: 'UTC' },
    webhookReconcile: { pattern: null, tz: 'UTC' },
    deadLetterSummary: { pattern: null, tz: 'UTC' },
    journeyCompact: { pattern: null, tz: 'UTC' },
  },
};

export async function createE2eEnv(options: E2eEnvOptions = {}): Promise<E2eEnv> {
  const sandbox = await startSandbox({ port: 0, ...options.sandbox });
  const dir = await mkdtemp(join(tmpdir(), 'cs-e2e-'));
  const spool = join(dir, 'spool');
  const prefix = uniquePrefix('e2e');
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, stringify(merge(DEFAULT_SETTINGS, options.settings ?? {})));
  const carrierKey = Object.values(sandbox.keys.carriers)[0] ?? '';
  const env = {
    REDIS_URL: testRedisUrl(),
    CARRIER_SYNC_PREFIX: prefix,
    CARRIER_SYNC_SPOOL_DIR: spool,
    CARRIER_SYNC_API_URL: sandbox.url,
    CARRIER_SYNC_CARRIER_KEY: carrierKey,
    CARRIER_SYNC_HTTP_PORT: '0',
    CARRIER_SYNC_WRITE_STABLE_MS: '100',
    CARRIER_SYNC_BACKOFF_MS: '50',
    LOG_LEVEL: 'info',
  };
  return {
    sandbox,
    carrierKey,
    dir,
    spool,
    prefix,
    configPath,
    env,
    args: (...args) => ['--config', configPath, ...args],
    async close() {
      await sandbox.close();
      await cleanupPrefix(prefix);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once a worker of `env`'s daemon has taken a rate-limiter slot: the next thing it does is send the request. */
export async function waitForRequestStarted(env: E2eEnv): Promise<void> {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  try {
    const key = createKeys(env.prefix).limiter(keyIdOf(env.carrierKey));
    await waitFor(async () => (await redis.zcard(key)) > 0, { what: 'a request to be started' });
  } finally {
    redis.disconnect();
  }
}

/** Drops a file into an inbox the way a careful producer does: written as `.tmp`, then renamed. */
export async function dropFile(inbox: string, name: string, content: string | Buffer): Promise<void> {
  await mkdir(inbox, { recursive: true });
  await writeFile(join(inbox, `${name}.tmp`), content);
  await rename(join(inbox, `${name}.tmp`), join(inbox, name));
}

/** Every file under `dir`, as paths relative to it (empty when it does not exist). */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (sub: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(join(dir, sub), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      const rel = sub === '' ? entry.name : `${sub}/${entry.name}`;
      if (entry.isDirectory()) await walk(rel);
      else out.push(rel);
    }
  };
  await walk('');
  return out.sort();
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] =
      value !== null && typeof value === 'object' && !Array.isArray(value) && current !== null && typeof current === 'object' && !Array.isArray(current)
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}
