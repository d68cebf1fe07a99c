/**
 * An answer the API gave is never bought again (issue 28 item 2). Two daemon processes on a
 * redis-server of the test's own, a sandbox that answers slowly (so requests are in flight when
 * Redis changes under them), BullMQ's lock short (3 s) so a job whose lock lapses is taken up again
 * by the other process:
 *  - Redis refuses writes (maxmemory) while requests are on the wire, for longer than the lock:
 *    each answer is kept by the process that holds it and written once Redis takes writes again;
 *    no event is sent twice.
 *  - Redis stopped and started while requests are on the wire: the same.
 *  - the owner killed (-9) while its request is on the wire: the other process waits for the
 *    owner's grace, sends it again, and the journey says "answer unknown: owner process died; sent again".
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { parseAttemptRecord } from '../../src/gate/attempt-owner.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

let env: E2eEnv | undefined;
let redis: OwnRedis | undefined;
let admin: Redis | undefined;

afterEach(async () => {
  await killAllDaemons();
  admin?.disconnect();
  admin = undefined;
  await redis?.close();
  redis = undefined;
  await env?.close();
  env = undefined;
});

const REFUSED = 'Redis refuses writes: claims, retries and moves wait until it takes them again (one line when it does)';
const TAKEN = 'Redis takes writes again';

async function setUp(latencyMs: number): Promise<{ a: DaemonProcess; b: DaemonProcess }> {
  redis = await startOwnRedis();
  admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => {});
  env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, faults: { latencyMs } } });
  const common = { ...env.env, REDIS_URL: redis.url };
  const a = spawnDaemon(common, { args: env.args('start') });
  await waitUntilStarted(a);
  const b = spawnDaemon(common, { args: env.args('start', '--roles', 'worker') });
  await waitUntilStarted(b);
  return { a, b };
}

/** Events of distinct deliveries, one file. */
async function dropEvents(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  const lines = ids.map((id, i) => JSON.stringify({ delivery_id: id, event_at: new Date(Date.UTC(2026, 2, 1, 10, 0, i)).toISOString() }));
  await dropFile(join(env!.spool, 'events'), 'batch.ndjson', `${lines.join('\n')}\n`);
  return ids;
}

function acceptedPerDelivery(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of env!.sandbox.requests()) {
    if (request.endpoint !== 'collecting' || request.status !== 200 || request.deliveryId === undefined) continue;
    counts.set(request.deliveryId, (counts.get(request.deliveryId) ?? 0) + 1);
  }
  return counts;
}

async function attemptRecords(): Promise<string[]> {
  return admin!.keys(`${env!.prefix}:attempt-owner:*`);
}

/**
 * Every event accepted by the API and the events file archived: its batch closes only once each
 * event's leave (which clears the attempt record, in the same script as the outcome) is written.
 * The API's answers alone, or an empty outcome list, say nothing of answers still kept in a process.
 */
async function settled(count: number): Promise<void> {
  await waitFor(
    async () =>
      acceptedPerDelivery().size === count &&
      (await listFiles(join(env!.spool, 'archive', 'events'))).length === 1 &&
      (await admin!.llen(`${env!.prefix}:outcomes:${await spoolIdOf()}`)) === 0,
    { timeoutMs: 60_000, what: `${count} events accepted, their answers written and the events file archived` },
  );
}

async function spoolIdOf(): Promise<string> {
  return (await admin!.smembers(`${env!.prefix}:spools`))[0] ?? '';
}

it(
  'Redis refusing writes (maxmemory) while answers are on the wire, longer than the job lock: each answer is kept and written later, none bought twice',
  { timeout: 120_000 },
  async () => {
    const { a, b } = await setUp(1500);
    const ids = await dropEvents(6);
    await waitFor(async () => (await attemptRecords()).length >= 2, { timeoutMs: 30_000, what: 'requests on the wire' });
    await admin!.config('SET', 'maxmemory', '1');
    const inFlight = await attemptRecords();
    // Long enough for the lapsed locks to matter: every job lock of the requests on the wire is gone.
    await waitFor(async () => (await admin!.keys(`${env!.prefix}:collecting:*:lock`)).length === 0, { timeoutMs: 30_000, what: 'the job locks lapsing' });
    await waitFor(() => [a, b].every((d) => d.logs().some((line) => line.msg === REFUSED)), {
      timeoutMs: 15_000,
      what: 'both processes saying writes are refused',
    });
    await admin!.config('SET', 'maxmemory', '0');
    await settled(ids.length);
    await waitFor(() => [a, b].every((d) => d.logs().some((line) => line.msg === TAKEN)), {
      timeoutMs: 15_000,
      what: 'both processes saying writes are taken again',
    });

    expect(inFlight.length).toBeGreaterThanOrEqual(2);
    expect([...acceptedPerDelivery().values()]).toEqual(ids.map(() => 1));
    for (const daemon of [a, b]) {
      expect(daemon.logs().filter((line) => line.msg === REFUSED)).toHaveLength(1);
      expect(daemon.logs().filter((line) => line.msg === TAKEN)).toHaveLength(1);
      expect(
        daemon
          .logs()
          .filter((line) => (line.level ?? 0) >= 50)
          .map((line) => line.msg),
      ).toEqual([]);
    }
    expect(await attemptRecords()).toEqual([]);
  },
);

it('Redis stopped and started while answers are on the wire: each answer is written once it is back, none bought twice', { timeout: 120_000 }, async () => {
  const { a, b } = await setUp(1500);
  const ids = await dropEvents(6);
  await waitFor(async () => (await attemptRecords()).length >= 2, { timeoutMs: 30_000, what: 'requests on the wire' });
  await redis!.stop();
  await waitFor(() => [a, b].every((d) => d.logs().some((line) => line.msg === 'Redis unreachable: waiting for it to come back (one line when it does)')), {
    timeoutMs: 15_000,
    what: 'both processes saying Redis is away',
  });
  await redis!.start();
  await settled(ids.length);
  expect([...acceptedPerDelivery().values()]).toEqual(ids.map(() => 1));
  if (process.env['CS_DEBUG_KEPT'] === '1') {
    for (const key of await attemptRecords()) process.stderr.write(`RECORD ${key} ${JSON.stringify(await admin!.get(key))}\n`);
    for (const [i, d] of [a, b].entries())
      for (const l of d.logs().filter((l) => (l.level ?? 0) >= 40 || l.msg === 'item sent'))
        process.stderr.write(`LOG ${i} ${JSON.stringify({ msg: l.msg, jobId: l['jobId'], result: l['result'] })}\n`);
  }
  expect(await attemptRecords()).toEqual([]);
});

it(
  'the owner killed with its answer on the wire: the other process waits out its grace, sends it again, and the journey says so',
  { timeout: 120_000 },
  async () => {
    const { a, b } = await setUp(3000);
    const [id] = await dropEvents(1);
    await waitFor(async () => (await attemptRecords()).length === 1, { timeoutMs: 30_000, what: 'the request on the wire' });
    const record = parseAttemptRecord(await admin!.get((await attemptRecords())[0]!));
    const owner = [a, b].find((d) => record?.owner.includes(`:${d.child.pid}:`));
    expect(owner, JSON.stringify(record)).toBeDefined();
    owner!.kill('SIGKILL');
    await owner!.exited;
    const survivor = owner === a ? b : a;
    await survivor.waitForLog((line) => line.msg === 'item sent' && line['deliveryId'] === id, {
      timeoutMs: 60_000,
      what: 'the event sent again by the survivor',
    });
    const journey = await runCli(env!.args('history', id!), { env: { ...env!.env, REDIS_URL: redis!.url } });
    expect(journey.stdout).toContain('answer unknown: owner process died; sent again');
    expect(journey.stdout.match(/attempt/g)?.length ?? 0, journey.stdout).toBeGreaterThanOrEqual(2);
  },
);
