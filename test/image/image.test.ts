/**
 * `npm run test:image` (opt-in, not in CI): builds the Dockerfile with podman or docker and runs
 * the image against this machine's test redis-server and an in-process sandbox API, on the host's
 * network (everything on loopback). Checks what the image promises: its size and contents, the one
 * line without REDIS_URL, health and readiness (and the HEALTHCHECK), uid 1000, a label's journey
 * to archive/, all on a read-only root filesystem with no tmpfs, and a clean stop with a request
 * in flight. Prints the size and timings (BENCHMARKS.md, "Container image").
 *
 * Where no container registry is reachable, the base comes from deploy/image/stand-in-base.sh
 * (made here when missing, if this runs as root with debootstrap installed).
 */
import { randomUUID } from 'node:crypto';
import { chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/server.js';
import { createKeys, keyIdOf } from '../../src/store/keys.js';
import { makePdf } from '../support/builders.js';
import { dropFile, listFiles } from '../support/e2e-env.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { freePort } from '../support/redis-process.js';
import { waitFor } from '../support/wait.js';
import { findEngine, must, type Engine } from './engine.js';
import { prepareBase, buildImage, runArgsFor, IMAGE, BASE } from './image-build.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const APP_LAYERS_BUDGET_BYTES = 85e6;
const NODE_UID = 1000;
const GRACE_MS = 30_000;
const STOP_TIMEOUT_S = 45;

let engine: Engine;
let runArgs: string[];
const report: Record<string, number | string> = {};

beforeAll(async () => {
  engine = await findEngine();
  report['engine'] = engine.name;
  await prepareBase(engine, ROOT);
  report['buildMs'] = await buildImage(engine, ROOT);
  runArgs = await runArgsFor(engine);
}, 1_800_000);

afterAll(() => {
  process.stdout.write(`\nimage report: ${JSON.stringify(report)}\n`);
});

describe('the image', () => {
  it('is small: the app layers within budget, no TypeScript, no source maps or type declarations', async () => {
    const size = async (image: string): Promise<number> => Number((await must(engine, ['image', 'inspect', '--format', '{{.Size}}', image])).trim());
    const appBytes = (await size(IMAGE)) - (await size(BASE));
    report['imageMB'] = Math.round((await size(IMAGE)) / 1e5) / 10;
    report['appLayersMB'] = Math.round(appBytes / 1e5) / 10;
    expect(appBytes).toBeLessThanOrEqual(APP_LAYERS_BUDGET_BYTES);
    const contents = await must(engine, [
      'run',
      '--rm',
      ...runArgs,
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      'ls node_modules; find node_modules -name "*.map" -o -name "*.d.ts" | head -3',
    ]);
    expect(contents.split('\n')).not.toContain('typescript');
    expect(contents).not.toMatch(/\.(map|d\.ts)$/m);
    expect(contents.split('\n')).toContain('bullmq');
  });

  it('runs the Node that package.json engines allows', async () => {
    const version = (await must(engine, ['run', '--rm', ...runArgs, '--entrypoint', 'node', IMAGE, '-p', 'process.versions.node'])).trim();
    const [major, minor] = version.split('.').map(Number);
    expect(major).toBe(20);
    expect(minor).toBeGreaterThanOrEqual(19);
  });

  it('without REDIS_URL, says in one line that Redis must be given (exit 2)', async () => {
    // --no-healthcheck: podman would add its own lines about health-check timers to stderr.
    const result = await engine.run(['run', '--rm', '--no-healthcheck', ...runArgs, ...readOnly(), IMAGE, 'status']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^carrier-sync: REDIS_URL is not set and there is no redis-server .* give carrier-sync its Redis with REDIS_URL/),
    ]);
  });
});

describe('the daemon in the image, read-only root, against Redis and the sandbox', () => {
  let sandbox: SandboxHandle;
  let spool: string;
  let name: string;
  let port: number;
  let prefix: string;
  let carrierKey: string;
  let startedAt: number;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, autoCreateDeliveries: true });
    carrierKey = Object.values(sandbox.keys.carriers)[0]!;
    spool = await mkdtemp(join(tmpdir(), 'cs-image-spool-'));
    for (const inbox of ['labels', 'cte', 'events']) await mkdir(join(spool, inbox));
    for (const path of [spool, ...['labels', 'cte', 'events'].map((inbox) => join(spool, inbox))]) await chown(path, NODE_UID, NODE_UID);
    port = await freePort();
    prefix = uniquePrefix('image');
    name = `carrier-sync-test-${process.pid}`;
    startedAt = Date.now();
    const env = {
      REDIS_URL: testRedisUrl(),
      CARRIER_SYNC_PREFIX: prefix,
      CARRIER_SYNC_API_URL: sandbox.url,
      CARRIER_SYNC_CARRIER_KEY: carrierKey,
      CARRIER_SYNC_HTTP_PORT: String(port),
      CARRIER_SYNC_WRITE_STABLE_MS: '100',
      CARRIER_SYNC_GRACE_MS: String(GRACE_MS),
    };
    const envArgs = Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
    await must(engine, ['run', '-d', '--name', name, '--network', 'host', ...runArgs, ...readOnly(), ...envArgs, '-v', `${spool}:/spool`, IMAGE]);
  }, 120_000);

  afterAll(async () => {
    await engine.run(['rm', '-f', name]);
    await sandbox.close();
    await cleanupPrefix(prefix);
    await rm(spool, { recursive: true, force: true });
  });

  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, body: await response.text() };
  };
  const archivedLabels = async (): Promise<string[]> =>
    (await listFiles(join(spool, 'archive', 'labels'))).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, ''));

  it('is healthy and ready, and its HEALTHCHECK passes', async () => {
    await waitFor(async () => (await get('/readyz').catch(() => ({ status: 0 }))).status === 200, { timeoutMs: 60_000, what: '/readyz 200' });
    report['readyMs'] = Date.now() - startedAt;
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', version: expect.any(String) });
    const check = await engine.run(engine.name === 'podman' ? ['healthcheck', 'run', name] : ['inspect', '--format', '{{json .Config.Healthcheck}}', name]);
    expect(check.code, check.stderr).toBe(0);
  });

  it('answers `status` run inside it (kubectl exec … node dist/src/main.js status)', async () => {
    const status = await engine.run(['exec', name, 'node', 'dist/src/main.js', 'status', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toHaveProperty('queues.label');
  });

  it("runs worker-only (the chart's worker pods): read-only, no spool volume, ready", async () => {
    const workerPort = await freePort();
    const worker = `${name}-worker`;
    const env = {
      REDIS_URL: testRedisUrl(),
      CARRIER_SYNC_PREFIX: prefix,
      CARRIER_SYNC_API_URL: sandbox.url,
      CARRIER_SYNC_CARRIER_KEY: carrierKey,
      CARRIER_SYNC_HTTP_PORT: String(workerPort),
    };
    const envArgs = Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
    try {
      await must(engine, [
        'run',
        '-d',
        '--name',
        worker,
        '--network',
        'host',
        '--no-healthcheck',
        ...runArgs,
        ...readOnly(),
        ...envArgs,
        IMAGE,
        'start',
        '--roles',
        'worker,http',
      ]);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${workerPort}/readyz`).catch(() => undefined))?.status === 200, {
        timeoutMs: 60_000,
        what: 'the worker /readyz 200',
      });
      await must(engine, ['stop', '-t', String(STOP_TIMEOUT_S), worker], (STOP_TIMEOUT_S + 15) * 1000);
      expect((await must(engine, ['inspect', '--format', '{{.State.ExitCode}}', worker])).trim()).toBe('0');
      const logs = await engine.run(['logs', worker]);
      const errors = (logs.stdout + logs.stderr).split('\n').filter((line) => /"level":(50|60)/.test(line));
      expect(errors).toEqual([]);
    } finally {
      await engine.run(['rm', '-f', worker]);
    }
  });

  it('runs as uid 1000', async () => {
    expect((await must(engine, ['exec', name, 'id', '-u'])).trim()).toBe(String(NODE_UID));
    expect((await must(engine, ['inspect', '--format', '{{.Config.User}}', name])).trim()).toBe('node');
  });

  it('takes a label through its journey to archive/ while nothing else is writable', async () => {
    const label = `${randomUUID()}.pdf`;
    const droppedAt = Date.now();
    await dropFile(join(spool, 'labels'), label, await makePdf('image'));
    await waitFor(async () => (await archivedLabels()).includes(label), { timeoutMs: 30_000, what: 'the label in archive/' });
    report['labelToArchiveMs'] = Date.now() - droppedAt;
    for (const path of ['/app/probe', '/tmp/probe', '/home/node/probe']) {
      const touch = await engine.run(['exec', name, 'touch', path]);
      expect(touch.code, `touch ${path}`).not.toBe(0);
      expect(touch.stderr + touch.stdout).toMatch(/Read-only file system/);
    }
  });

  it('stops cleanly with a request in flight: it finishes, its file is archived, exit 0', async () => {
    sandbox.setFaults({ latencyMs: 3000 });
    const label = `${randomUUID()}.pdf`;
    await dropFile(join(spool, 'labels'), label, await makePdf('in flight'));
    const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
    try {
      const limiter = createKeys(prefix).limiter(keyIdOf(carrierKey));
      // A request holds its limiter slot scored in the future until its answer comes (src/gate/limiter.ts).
      await waitFor(async () => (await redis.zcount(limiter, Date.now(), '+inf')) > 0, { what: 'a request in flight' });
    } finally {
      redis.disconnect();
    }
    const signalledAt = Date.now();
    await must(engine, ['stop', '-t', String(STOP_TIMEOUT_S), name], (STOP_TIMEOUT_S + 15) * 1000);
    report['stopMs'] = Date.now() - signalledAt;
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);
    expect((await must(engine, ['inspect', '--format', '{{.State.ExitCode}}', name])).trim()).toBe('0');
    const answered = sandbox.requests().filter((request) => request.endpoint === 'label');
    expect(answered.map((request) => request.status)).toEqual([200, 200]);
    expect(answered[1]!.at + answered[1]!.durationMs).toBeGreaterThanOrEqual(signalledAt);
    expect(await archivedLabels()).toContain(label);
    expect(await listFiles(join(spool, '.inflight'))).toEqual([]);
    const logs = await engine.run(['logs', name]);
    expect(logs.stdout + logs.stderr).toContain('shut down cleanly');
    expect(logs.stdout + logs.stderr).not.toContain(carrierKey);
  });
});

/** A read-only root with no writable tmpfs added (podman mounts /tmp, /run… writable by default). */
function readOnly(): string[] {
  return engine.name === 'podman' ? ['--read-only', '--read-only-tmpfs=false'] : ['--read-only'];
}
