/**
 * A full spool disk, for real: the spool is a 2 MiB tmpfs that the test fills. Invalid files then
 * cannot get their `.error.json`; the daemon must say so once (a warning, `/readyz` 503 "spool disk
 * full", the overview's state, `carrier_sync_spool_disk_full` 1), back off instead of retrying in a
 * tight loop, leave none of its temporary files behind, and once space is freed refuse every file
 * with its report and say once that writes succeed again. Needs root (mount); skipped without it.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startDaemon, type DaemonHandle } from '../../src/runtime/start.js';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/server.js';
import { resolveSpoolId } from '../../src/spool/lease/spool-id.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const FULL_WARNING = 'spool disk full: files wait where they are (inbox or in flight) and are taken up again once writes succeed';
const BACK = 'spool disk: writes succeed again';
const BACKING_OFF = 'claim failed: the spool disk is full; will try again';
const FILES = 12;

interface Line {
  level: number;
  msg: string;
  time: number;
  file?: string;
  [field: string]: unknown;
}

const mountPoint = await mkdtemp(join(tmpdir(), 'cs-full-spool-'));
const isMounted = ((): boolean => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mountPoint], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const prefix = uniquePrefix('diskfull');
const lines: Line[] = [];
let sandbox: SandboxHandle | undefined;
let daemon: DaemonHandle | undefined;
let configDir: string | undefined;

beforeAll(async () => {
  if (!isMounted) return;
  sandbox = await startSandbox({ port: 0 });
  configDir = await mkdtemp(join(tmpdir(), 'cs-full-config-'));
  const configPath = join(configDir, 'config.yaml');
  await writeFile(
    configPath,
    stringify({
      spool: { writeStableMs: 100, rescanIntervalMs: 1000 },
      schedules: {
        rescan: { pattern: null, tz: 'UTC' },
        webhookReconcile: { pattern: null, tz: 'UTC' },
        deadLetterSummary: { pattern: null, tz: 'UTC' },
        journeyCompact: { pattern: null, tz: 'UTC' },
      },
    }),
  );
  const config = loadConfig({
    configPath,
    env: {
      REDIS_URL: testRedisUrl(),
      CARRIER_SYNC_PREFIX: prefix,
      CARRIER_SYNC_SPOOL_DIR: mountPoint,
      CARRIER_SYNC_API_URL: sandbox.url,
      CARRIER_SYNC_CARRIER_KEY: Object.values(sandbox.keys.carriers)[0] ?? '',
      CARRIER_SYNC_HTTP_PORT: '0',
      LOG_LEVEL: 'debug',
    },
  });
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) if (text !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  daemon = startDaemon(config, ['watcher', 'http'], createLogger({ level: 'debug', destination }));
  await daemon.ready;
});

afterAll(async () => {
  await daemon?.stop();
  await sandbox?.close();
  await cleanupPrefix(prefix);
  if (configDir !== undefined) await rm(configDir, { recursive: true, force: true });
  if (isMounted) execFileSync('umount', [mountPoint]);
  await rmdir(mountPoint);
});

/** Every file under `dir`, hidden ones included, relative to it. */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(d, entry.name));
      else out.push(join(d, entry.name).slice(dir.length + 1));
    }
  };
  await walk(dir);
  return out.sort();
}

/** Writes zeros into `path` until the file system says ENOSPC. */
async function fill(path: string): Promise<void> {
  await writeFile(path, Buffer.alloc(4 * 1024 * 1024)).then(
    () => {
      throw new Error('the 2 MiB tmpfs took 4 MiB: it is not the small file system this test needs');
    },
    (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOSPC') throw error;
    },
  );
}

const ops = (path: string): Promise<Response> => fetch(`${daemon!.opsUrl()}${path}`);
const gauge = async (): Promise<string | undefined> =>
  (await (await ops('/metrics')).text()).match(/^carrier_sync_spool_disk_full\{spool="[^"]+"\} (\d)$/m)?.[1];

/**
 * No temporary file stays: one the holder file's periodic write has open between its write and its
 * rename lives for milliseconds (stop 43's clean-clone run listed one at that moment); a leaked one
 * stays for good.
 */
async function noTempFileLeft(): Promise<void> {
  const temps = async (): Promise<string[]> => (await allFiles(mountPoint)).filter((path) => path.endsWith('.tmp'));
  await waitFor(async () => (await temps()).length === 0, { timeoutMs: 5000, what: 'no temporary file left' }).catch(async (error: Error) => {
    throw new Error(`${error.message}: ${(await temps()).join(', ')}`);
  });
}

describe.skipIf(!isMounted)('a full spool disk (a 2 MiB tmpfs)', () => {
  it('is said once, shows in /readyz, the overview and a metric, backs off, leaves no temp file, and settles every file once space is freed', async () => {
    const names = Array.from({ length: FILES }, () => `${randomUUID()}.xml`);
    // Staged with their bytes while there is room; renamed into the inbox once the disk is full
    // (a rename needs no room on tmpfs), as if dropped there.
    const staging = join(mountPoint, 'staging');
    await mkdir(staging);
    for (const name of names) await writeFile(join(staging, name), '<CTe><not-closed>');
    expect(await gauge()).toBe('0');
    const filler = join(mountPoint, 'filler');
    await fill(filler);
    const fullAt = Date.now();
    for (const name of names) await rename(join(staging, name), join(mountPoint, 'cte', name));

    const readyz = await waitFor(
      async () => {
        const response = await ops('/readyz');
        const body = (await response.json()) as { status: string; reason?: string };
        return response.status === 503 && body.reason?.startsWith('spool disk full') === true ? body : null;
      },
      { what: '/readyz 503 spool disk full' },
    );
    expect(readyz.reason).toMatch(/^spool disk full: writes in the spool fail with ENOSPC since /);
    expect(await gauge()).toBe('1');
    const overview = (await (await ops('/ui/overview.json')).json()) as { state: { code: string; headline: string } };
    expect(overview.state.code).toBe('disk-full');
    expect(overview.state.headline).toMatch(/^Spool disk full/);

    // Each file tried at least four times (backoff 250, 500, 1000 ms): long enough to see a loop.
    await waitFor(() => names.every((name) => lines.filter((line) => line.msg === BACKING_OFF && line.file === name).length >= 4), {
      what: 'four tries of every file',
      timeoutMs: 20_000,
    });
    const fullForMs = Date.now() - fullAt;
    // From the moment the disk filled: one warning, and no error line at all.
    const loud = lines.filter((line) => line.level >= 40 && line.time >= fullAt);
    expect(loud.map((line) => line.msg)).toEqual([FULL_WARNING]);
    // Doubling from 250 ms: within t ms a file is tried at most log2(t / 250) + 2 times (the old
    // loop tried it every writeStableMs, 100 ms here).
    const maxTries = Math.floor(Math.log2(fullForMs / 250)) + 2;
    for (const name of names) expect(lines.filter((line) => line.msg === BACKING_OFF && line.file === name).length).toBeLessThanOrEqual(maxTries);
    await noTempFileLeft();
    expect(await readdir(join(mountPoint, 'cte'))).toHaveLength(FILES);

    await rm(filler);
    await waitFor(async () => (await readdir(join(mountPoint, 'failed', 'cte'))).length === 2 * FILES, {
      what: 'every file refused with its report',
      timeoutMs: 45_000,
    });
    const failed = await allFiles(join(mountPoint, 'failed', 'cte'));
    expect(failed).toEqual(names.flatMap((name) => [name, `${name}.error.json`]).sort());
    for (const name of names)
      expect(JSON.parse(await readFile(join(mountPoint, 'failed', 'cte', `${name}.error.json`), 'utf8'))).toMatchObject({ kind: 'cte' });
    expect(await readdir(join(mountPoint, 'cte'))).toEqual([]);
    expect(lines.filter((line) => line.msg === BACK)).toHaveLength(1);
    expect(lines.filter((line) => line.msg === FULL_WARNING)).toHaveLength(1);
    expect(lines.find((line) => line.msg === BACK)?.['fullForMs']).toBeGreaterThan(0);
    expect((await ops('/readyz')).status).toBe(200);
    expect(await gauge()).toBe('0');
    await noTempFileLeft();
  });

  it('a spool id that cannot be written on a full disk leaves no temporary file behind', async () => {
    const filler = join(mountPoint, 'filler-2');
    await fill(filler);
    try {
      const fresh = join(mountPoint, 'fresh-spool');
      await expect(resolveSpoolId(fresh, null, createLogger({ level: 'silent' }))).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(await readdir(fresh)).toEqual([]);
    } finally {
      await rm(filler);
    }
  });
});
