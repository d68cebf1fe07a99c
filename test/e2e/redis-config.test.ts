/**
 * What the daemon does about the Redis it is pointed at, against redis-servers of the test's own:
 * an evicting one is refused (one line, exit 2) unless CARRIER_SYNC_ALLOW_EVICTING_REDIS=true, and
 * then every line on stdout and stderr is JSON (BullMQ's own plain-text eviction warning, once per
 * connection, goes through the log) with exactly one warning about eviction. One where CONFIG is
 * disabled (as managed Redis services do) is still checked for eviction, and the CONFIG failure is
 * logged whole, stack included. A start that fails otherwise is one JSON line with the error whole,
 * and exit 1. A Redis on the same machine is reached through its Unix socket when REDIS_URL says
 * `unix://`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type LogLine } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const opened: Array<OwnRedis | E2eEnv> = [];

afterEach(async () => {
  await killAllDaemons();
});

afterAll(async () => {
  for (const resource of opened) await resource.close();
});

async function surroundings(redisOptions: Parameters<typeof startOwnRedis>[0]): Promise<{ env: E2eEnv; redis: OwnRedis }> {
  const redis = await startOwnRedis(redisOptions);
  const env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
  opened.push(redis, env);
  return { env, redis };
}

/** Drops a valid label into the spool and waits (30 s at most) until it is under archive/. */
async function dropLabelUntilArchived(env: E2eEnv): Promise<void> {
  const label = randomUUID();
  await dropFile(join(env.spool, 'labels'), `${label}.pdf`, await makePdf('label'));
  await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).some((path) => path.endsWith(`${label}.pdf`)), {
    timeoutMs: 30_000,
    what: 'the label archived',
  });
}

/** Parses every non-empty line of a stream as one JSON object; the test fails on the first that is not. */
function jsonLines(lines: readonly string[], stream: string): LogLine[] {
  return lines
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        throw new Error(`a line on ${stream} is not JSON: ${line}`);
      }
    });
}

it('refuses to start on a Redis with maxmemory-policy allkeys-lru: one line naming the policy and the fix, exit 2', async () => {
  const { env, redis } = await surroundings({ maxmemoryPolicy: 'allkeys-lru' });
  const result = await runCli(env.args('start'), { env: { ...env.env, REDIS_URL: redis.url }, timeoutMs: 30_000 });
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe('');
  const lines = result.stderr.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^carrier-sync: Redis maxmemory-policy is allkeys-lru: .*noeviction.*CARRIER_SYNC_ALLOW_EVICTING_REDIS=true/);
});

it('with CARRIER_SYNC_ALLOW_EVICTING_REDIS=true it starts and works, every line on stdout and stderr is JSON, and eviction is warned about once', async () => {
  const { env, redis } = await surroundings({ maxmemoryPolicy: 'allkeys-lru' });
  const daemon = spawnDaemon({ ...env.env, REDIS_URL: redis.url, CARRIER_SYNC_ALLOW_EVICTING_REDIS: 'true' }, { args: env.args('start') });
  await waitUntilStarted(daemon);
  await dropLabelUntilArchived(env);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code, daemon.tail()).toBe(0);

  const lines = [...jsonLines(daemon.stderrLines, 'stderr'), ...jsonLines(daemon.stdoutLines, 'stdout')];
  expect(lines.map((line) => line.msg)).toContain('shut down cleanly');
  const aboutEviction = lines.filter((line) => (line.level ?? 0) >= 40 && /evict/i.test(JSON.stringify(line)));
  expect(aboutEviction).toHaveLength(1);
  expect(aboutEviction[0]?.['policy']).toBe('allkeys-lru');
});

it('a Redis whose CONFIG command is disabled is still checked for eviction, and the CONFIG failure is logged with its stack', async () => {
  const { env, redis } = await surroundings({ maxmemoryPolicy: 'volatile-lru', extraArgs: ['--rename-command', 'CONFIG', ''] });
  const refused = await runCli(env.args('start'), { env: { ...env.env, REDIS_URL: redis.url }, timeoutMs: 30_000 });
  expect(refused.code, refused.stderr).toBe(2);
  expect(refused.stderr).toMatch(/maxmemory-policy is volatile-lru/);

  const daemon = spawnDaemon({ ...env.env, REDIS_URL: redis.url, CARRIER_SYNC_ALLOW_EVICTING_REDIS: 'true' }, { args: env.args('start') });
  await waitUntilStarted(daemon);
  const line = await daemon.waitForLog((candidate) => candidate.msg === 'cannot read Redis config (CONFIG GET refused?): persistence not checked');
  const err = line['err'] as { type?: string; message?: string; stack?: string };
  expect(err.type).toBe('ReplyError');
  expect(err.message).toMatch(/unknown command/i);
  expect(err.stack).toMatch(/^ReplyError: ERR unknown command[^\n]*\n\s+at /);
  daemon.kill('SIGTERM');
  expect((await daemon.exited).code, daemon.tail()).toBe(0);
});

it('a start whose ops port is taken is one line naming the process that holds it and the setting to change, exit 2 (issue 45)', async () => {
  const { env, redis } = await surroundings({});
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const port = (taken.address() as { port: number }).port;
    const result = await runCli(env.args('start'), { env: { ...env.env, REDIS_URL: redis.url, CARRIER_SYNC_HTTP_PORT: String(port) }, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(2);
    // This test's own process holds the port: the line names it, and the setting.
    const refusal = result.stderr.split('\n').filter((line) => line.includes('already taken'));
    expect(refusal, result.stderr).toHaveLength(1);
    expect(refusal[0]).toContain(`127.0.0.1:${port}`);
    expect(refusal[0]).toContain(`process ${process.pid}`);
    expect(refusal[0]).toContain('CARRIER_SYNC_HTTP_PORT');
    // No raw stack for a person to read.
    expect(result.stderr).not.toMatch(/\n\s+at /);
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});

it('reaches a Redis on the same machine through its Unix socket (unix://…?db=3): every connection on the socket, the keys in db 3; over loopback TCP it points the socket out', async () => {
  const socketDir = await mkdtemp(join(tmpdir(), 'cs-sock-'));
  const socket = join(socketDir, 'redis.sock');
  const admin = { connection: undefined as Redis | undefined };
  try {
    const { env, redis } = await surroundings({ extraArgs: ['--unixsocket', socket, '--unixsocketperm', '700'] });
    const isHint = (line: LogLine): boolean => String(line.msg).startsWith('Redis on this machine also listens on a Unix socket');
    // Over loopback TCP, the daemon says once that the socket is there.
    const overTcp = spawnDaemon({ ...env.env, REDIS_URL: redis.url }, { args: env.args('start') });
    await waitUntilStarted(overTcp);
    expect((await overTcp.waitForLog(isHint))['suggested']).toBe(`unix://${socket}`);
    overTcp.kill('SIGTERM');
    expect((await overTcp.exited).code, overTcp.tail()).toBe(0);
    // What it left in db 0 goes, so that db 0 shows what the daemon on the socket writes there: nothing.
    admin.connection = new Redis(redis.url);
    await admin.connection.flushdb();

    const url = `unix://${socket}?db=3`;
    const daemon = spawnDaemon({ ...env.env, REDIS_URL: url }, { args: env.args('start') });
    await waitUntilStarted(daemon);
    await dropLabelUntilArchived(env);
    expect(env.sandbox.requests().filter((request) => request.path === '/v1/delivery/mail-label')).toHaveLength(1);

    // Looked at over TCP: every other client of this Redis is the daemon's, on the socket.
    const ownId = await admin.connection.client('ID');
    const others = String(await admin.connection.client('LIST'))
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith(`id=${ownId} `));
    expect(others.length).toBeGreaterThan(0);
    for (const client of others) expect(client).toContain(`addr=${socket}:0`);
    expect(await admin.connection.dbsize()).toBe(0);
    await admin.connection.select(3);
    expect(await admin.connection.dbsize()).toBeGreaterThan(0);

    const status = await runCli(env.args('status'), { env: { ...env.env, REDIS_URL: url }, timeoutMs: 30_000 });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`redis: single, primary unix://${socket}[;,]`));
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code, daemon.tail()).toBe(0);
    expect(jsonLines(daemon.stderrLines, 'stderr').filter(isHint)).toEqual([]);
  } finally {
    admin.connection?.disconnect();
    await rm(socketDir, { recursive: true, force: true });
  }
});
