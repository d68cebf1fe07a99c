/**
 * Redis not there yet is a state, not a hang (issue 35): the built daemon against a Redis that is
 * not running (a typo in REDIS_URL, a Redis that comes up after the daemon under compose). The ops
 * port answers within 2 s (`/healthz` 200, `/readyz` 503 naming the address and the setting, never
 * the password), one warn line says so, a signal stops it at once, and when Redis comes up the
 * roles start on the same port. CLI commands that need Redis end within 10 s with one line, exit 1.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createE2eEnv, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';

const PASSWORD = 'late-secret-7f3a';

let env: E2eEnv | undefined;
let redis: OwnRedis | undefined;
afterEach(async () => {
  await killAllDaemons();
  await redis?.close();
  await env?.close();
  redis = env = undefined;
});

/** REDIS_URL with a password, pointing at a redis-server not started yet. */
async function setUp(): Promise<{ env: E2eEnv; redis: OwnRedis; url: string }> {
  redis = await startOwnRedis({ isStartedNow: false, extraArgs: ['--requirepass', PASSWORD] });
  env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true }, settings: { shutdown: { graceMs: 6000 } } });
  return { env, redis, url: redis.url.replace('redis://', `redis://:${PASSWORD}@`) };
}

/**
 * The ops server's URL, from the warn line that says Redis does not answer. It comes within 2 s of
 * the start on a quiet machine; the bound here is 5 s, what a hang could never meet, because four
 * test files at once on two cores slowed Node's own start past 2 s (stop 43's clean-clone run).
 */
async function opsUrlOf(daemon: DaemonProcess): Promise<string> {
  const line = await daemon.waitForLog((candidate) => candidate.level === 40 && typeof candidate['opsUrl'] === 'string', {
    timeoutMs: 5000,
    what: 'the warn line with the ops port',
  });
  return String(line['opsUrl']);
}

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('Redis not reachable at start', () => {
  it('answers on the ops port at once, says why in one line, and starts its roles when Redis comes', { timeout: 60_000 }, async () => {
    const { env, redis, url } = await setUp();
    const startedAt = Date.now();
    const daemon = spawnDaemon({ ...env.env, REDIS_URL: url }, { args: env.args('start') });
    const opsUrl = await opsUrlOf(daemon);
    expect((await get(`${opsUrl}/healthz`)).status).toBe(200);
    const address = redis.url;
    const waitingLine = await daemon.waitForLog((line) => line.level === 40 && String(line.msg).includes(address), { timeoutMs: 5000, what: 'the warn line' });
    expect(waitingLine.msg).toContain('REDIS_URL');
    const unready = await get(`${opsUrl}/readyz`);
    expect(unready.status).toBe(503);
    expect(String(unready.body['reason'])).toMatch(/^redis not reachable at redis:\/\/127\.0\.0\.1:\d+ \(from REDIS_URL/);
    expect(Date.now() - startedAt, 'the ops port answered').toBeLessThan(5000);

    await redis.start();
    await waitUntilStarted(daemon, 30_000);
    const started = daemon.logs().find((line) => line.msg === 'carrier-sync started');
    expect(started?.['opsUrl'], 'the full server took the waiting one’s port').toBe(opsUrl);
    expect((await get(`${opsUrl}/readyz`)).status).toBe(200);
    // One warn line while waiting, however long the reconnects went on.
    expect(
      daemon
        .logs()
        .filter((line) => line.level === 40)
        .map((line) => line.msg),
    ).toEqual([waitingLine.msg]);

    daemon.kill('SIGTERM');
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    expect(daemon.stderrLines.join('\n')).not.toContain(PASSWORD);
  });

  it.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)('a %s while waiting stops the daemon at once, exit 0', { timeout: 30_000 }, async (signal) => {
    const { env, url } = await setUp();
    const daemon = spawnDaemon({ ...env.env, REDIS_URL: url }, { args: env.args('start') });
    await daemon.waitForLog((line) => line.level === 40, { timeoutMs: 5000, what: 'the warn line' });
    const signalledAt = Date.now();
    daemon.kill(signal);
    expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });
    // At once on a quiet machine; 5 s under a loaded test run still tells it from a hang.
    expect(Date.now() - signalledAt).toBeLessThan(5000);
    expect(daemon.logs().map((line) => line.msg)).toContain('shut down cleanly (stopped while starting)');
    expect(daemon.logs().filter((line) => (line.level ?? 0) >= 50)).toEqual([]);
  });

  it('status, dlq list and history end within 10 s with one line naming the address, exit 1', { timeout: 30_000 }, async () => {
    const { env, redis, url } = await setUp();
    const commands = [['status'], ['dlq', 'list'], ['history', 'd-1']];
    const results = await Promise.all(
      commands.map(async (args) => {
        const startedAt = Date.now();
        const result = await runCli(env.args(...args), { env: { ...env.env, REDIS_URL: url }, timeoutMs: 15_000 });
        return { ...result, tookMs: Date.now() - startedAt };
      }),
    );
    for (const result of results) {
      expect(result.code, result.stderr).toBe(1);
      expect(result.tookMs).toBeLessThan(10_000);
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(`redis not reachable at ${redis.url} (from REDIS_URL`)]);
      expect(result.stderr + result.stdout).not.toContain(PASSWORD);
    }
  });
});
