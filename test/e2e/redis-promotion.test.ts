/**
 * A failover behind one address (issue 28 item 4), as a managed service does it: two daemon
 * processes talk to redis-server A, which has a replica B. Under load, B is promoted (REPLICAOF NO
 * ONE) and A demoted to B's replica (its writes answer READONLY, its blocking commands UNBLOCKED);
 * then A is promoted again, B its replica once more. Asserted: per process one warn line and one
 * info line with `failoverMs`, nothing at error level; requests flow again within 10 s of the
 * promotion, without a restart; every event accepted exactly once; one `redis-failover`
 * notification saying how many answers were recorded after it and how many requests were sent again.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createE2eEnv, dropFile, type E2eEnv } from '../support/e2e-env.js';
import { startHttpReceiver, type HttpReceiver } from '../support/notify-receivers.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const WARN = 'Redis failover: the primary changed; waiting for the new one to take writes (one line when it does)';
const INFO = 'Redis failover over: the new primary takes writes';
const EVENTS = 80;

let env: E2eEnv | undefined;
const servers: OwnRedis[] = [];
const admins: Redis[] = [];
let receiver: HttpReceiver | undefined;

afterAll(async () => {
  await killAllDaemons();
  for (const admin of admins) admin.disconnect();
  for (const server of servers) await server.close();
  await env?.close();
  await receiver?.close();
});

async function inSync(replica: Redis): Promise<void> {
  await waitFor(async () => /master_link_status:up/.test(await replica.info('replication')), { timeoutMs: 20_000, what: 'the replica in sync' });
}

it('a failover under load is one warn and one info line per process, work flows again within 10 s, nothing is sent twice', { timeout: 150_000 }, async () => {
  const [a, b] = await Promise.all([startOwnRedis(), startOwnRedis()]);
  servers.push(a!, b!);
  const portA = new URL(a!.url).port;
  const portB = new URL(b!.url).port;
  const adminA = new Redis(a!.url, { maxRetriesPerRequest: null });
  const adminB = new Redis(b!.url, { maxRetriesPerRequest: null });
  admins.push(adminA, adminB);
  await adminB.replicaof('127.0.0.1', portA);
  await inSync(adminB);

  receiver = await startHttpReceiver();
  env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 300 } }, settings: { notify: { checkIntervalMs: 200 } } });
  const common = { ...env.env, REDIS_URL: a!.url, CARRIER_SYNC_NOTIFY_WEBHOOK_URL: receiver.url };
  const daemons = [1, 2].map(() => spawnDaemon(common, { args: env!.args('start') }));
  await Promise.all(daemons.map((daemon) => waitUntilStarted(daemon)));
  const ids = Array.from({ length: EVENTS }, () => randomUUID());
  const lines = ids.map((id, i) => JSON.stringify({ delivery_id: id, event_at: new Date(Date.UTC(2026, 2, 1, 10, 0, i)).toISOString() }));
  await dropFile(join(env.spool, 'events'), 'load.ndjson', `${lines.join('\n')}\n`);
  const accepted = (): number => env!.sandbox.requests().filter((r) => r.endpoint === 'collecting' && r.status === 200).length;
  await waitFor(() => accepted() >= 10, { timeoutMs: 30_000, what: 'requests flowing' });

  // The switch: B promoted, A demoted to its replica (A's writes now answer READONLY).
  await adminB.replicaof('NO', 'ONE');
  await adminA.replicaof('127.0.0.1', portB);
  await waitFor(() => daemons.every((d) => d.logs().some((line) => line.msg === WARN)), { timeoutMs: 20_000, what: 'both processes seeing the failover' });
  await inSync(adminA);
  // A takes over again behind the same address; B follows it.
  await adminA.replicaof('NO', 'ONE');
  const promotedAt = Date.now();
  await adminB.replicaof('127.0.0.1', portA);
  const before = accepted();
  await waitFor(() => accepted() > before, { timeoutMs: 10_000, what: 'requests flowing again within 10 s of the promotion' });
  const flowingAfterMs = Date.now() - promotedAt;

  await waitFor(() => accepted() >= EVENTS, { timeoutMs: 60_000, what: 'every event accepted' });
  await waitFor(() => receiver!.received.some((d) => (d.json as { condition: string }).condition === 'redis-failover'), {
    timeoutMs: 30_000,
    what: 'the redis-failover notification',
  });
  // Each process ends its own episode (after its own probes): the notification says nothing of the other's.
  await waitFor(() => daemons.every((d) => d.logs().some((line) => line.msg === INFO)), {
    timeoutMs: 15_000,
    what: 'both processes telling the failover over',
  });

  const perDelivery = new Map<string, number>();
  for (const r of env.sandbox.requests())
    if (r.endpoint === 'collecting' && r.status === 200 && r.deliveryId !== undefined) perDelivery.set(r.deliveryId, (perDelivery.get(r.deliveryId) ?? 0) + 1);
  const doubled = [...perDelivery].filter(([, n]) => n > 1).map(([id]) => id);
  if (doubled.length > 0 && process.env['CS_DEBUG_FAILOVER'] === '1') {
    const at = env.sandbox
      .requests()
      .filter((r) => doubled.includes(r.deliveryId ?? ''))
      .map((r) => ({ id: r.deliveryId, at: r.at - promotedAt, status: r.status }));
    const logs = daemons.flatMap((d, i) =>
      d
        .logs()
        .filter((l) => doubled.some((id) => JSON.stringify(l).includes(id)) || ((l.level ?? 0) >= 40 && !String(l.msg).startsWith('Possible EventEmitter')))
        .map((l) => ({ p: i, t: (l.time ?? 0) - promotedAt, msg: l.msg, jobId: l['jobId'], result: l['result'], attempt: l['attempt'] })),
    );
    process.stderr.write(`DOUBLED ${JSON.stringify(at)}\n${logs.map((l) => JSON.stringify(l)).join('\n')}\n`);
  }
  expect(doubled).toEqual([]);
  expect(perDelivery.size).toBe(EVENTS);
  expect(flowingAfterMs).toBeLessThan(10_000);
  for (const daemon of daemons) {
    const logs = daemon.logs();
    expect(
      logs.filter((line) => line.msg === WARN),
      daemon.tail(),
    ).toHaveLength(1);
    const info = logs.filter((line) => line.msg === INFO);
    expect(info).toHaveLength(1);
    expect(Number(info[0]?.['failoverMs'])).toBeGreaterThan(0);
    expect(logs.filter((line) => (line.level ?? 0) >= 50).map((line) => line.msg)).toEqual([]);
  }
  const messages = receiver.received
    .map((d) => d.json as { condition: string; summary: string; details: Record<string, unknown> })
    .filter((m) => m.condition === 'redis-failover');
  expect(messages).toHaveLength(1);
  expect(messages[0]?.details).toMatchObject({ sentAgain: 0 });
  expect(typeof messages[0]?.details['answersRecordedAfter']).toBe('number');
});
