/**
 * A full Redis (issue 28 item 3): maxmemory reached under noeviction while large labels arrive,
 * then memory raised (CONFIG SET). Two daemon processes (every role) on a redis-server of the
 * test's own, a webhook receiver for the notifications. Asserted: one warn line when writes are
 * refused and one info line when they are taken again, per process, nothing at error level;
 * `/readyz` 503 naming it; `carrier_sync_redis_writes_refused` 1 then 0; the overview's state
 * `redis-full`; the notification `redis-full` fires and resolves; the labels wait in the inbox, and
 * each is accepted exactly once and archived.
 */
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startHttpReceiver, type HttpReceiver } from '../support/notify-receivers.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const REFUSED = 'Redis refuses writes: claims, retries and moves wait until it takes them again (one line when it does)';
const TAKEN = 'Redis takes writes again';
const LABELS = 12;

let env: E2eEnv | undefined;
let redis: OwnRedis | undefined;
let admin: Redis | undefined;
let receiver: HttpReceiver | undefined;

afterAll(async () => {
  await killAllDaemons();
  admin?.disconnect();
  await redis?.close();
  await env?.close();
  await receiver?.close();
});

function opsUrlOf(daemon: DaemonProcess): string {
  return String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
}

async function archived(): Promise<number> {
  return (await readdir(join(env!.spool, 'archive', 'labels'), { recursive: true }).catch(() => [])).filter((f) => String(f).endsWith('.pdf')).length;
}

function states(): string[] {
  return receiver!.received
    .map((d) => d.json as { condition: string; state: string })
    .filter((m) => m.condition === 'redis-full')
    .map((m) => m.state);
}

it('a full Redis is told once and waited out: readiness, metric, overview, notification; nothing lost or sent twice', { timeout: 150_000 }, async () => {
  redis = await startOwnRedis();
  admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  receiver = await startHttpReceiver();
  env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true }, settings: { notify: { checkIntervalMs: 200 } } });
  const common = { ...env.env, REDIS_URL: redis.url, CARRIER_SYNC_NOTIFY_WEBHOOK_URL: receiver.url };
  const daemons = [1, 2].map(() => spawnDaemon(common, { args: env!.args('start') }));
  await Promise.all(daemons.map((daemon) => waitUntilStarted(daemon)));

  // Room for about two labels more than what is there now.
  const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1]);
  const labels = await Promise.all(Array.from({ length: LABELS }, async (_, i) => [randomUUID(), await makePdf(`large label ${i}`, 40)] as const));
  await admin.config('SET', 'maxmemory', String(used + 2 * labels[0]![1].length));
  for (const [id, pdf] of labels) await dropFile(join(env.spool, 'labels'), `${id}.pdf`, pdf);

  await waitFor(() => daemons.every((d) => d.logs().some((line) => line.msg === REFUSED)), {
    timeoutMs: 30_000,
    what: 'both processes saying writes are refused',
  });
  const opsUrl = opsUrlOf(daemons[0]!);
  const ready = await fetch(`${opsUrl}/readyz`);
  expect(ready.status).toBe(503);
  expect(JSON.stringify(await ready.json())).toMatch(/redis refuses writes.*OOM/i);
  expect(await (await fetch(`${opsUrl}/metrics`)).text()).toMatch(/^carrier_sync_redis_writes_refused 1$/m);
  const overview = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { state: { code: string; headline: string } };
  expect(overview.state.code).toBe('redis-full');
  await waitFor(() => states().includes('firing'), { timeoutMs: 20_000, what: 'the redis-full notification firing' });
  // Files wait in the inbox meanwhile (not all were claimed).
  expect((await listFiles(join(env.spool, 'labels'))).length).toBeGreaterThan(0);

  await admin.config('SET', 'maxmemory', '0');
  await waitFor(async () => (await archived()) === LABELS, { timeoutMs: 60_000, what: 'every label archived' });
  await waitFor(() => states().includes('resolved'), { timeoutMs: 20_000, what: 'the redis-full notification resolved' });
  await waitFor(() => daemons.every((d) => d.logs().some((line) => line.msg === TAKEN)), { timeoutMs: 15_000, what: 'both processes saying writes are taken' });

  const accepted = env.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200);
  expect(accepted.map((r) => r.deliveryId).sort()).toEqual(labels.map(([id]) => id).sort());
  const told = daemons.map((d, i) =>
    d
      .logs()
      .filter((l) => l.msg === REFUSED || l.msg === TAKEN)
      .map((l) => `${i} ${String(l.time)} ${l.msg}`),
  );
  expect(states(), [...told.flat(), ...receiver!.received.map((d) => JSON.stringify(d.json))].join('\n')).toEqual(['firing', 'resolved']);
  expect(await (await fetch(`${opsUrl}/metrics`)).text()).toMatch(/^carrier_sync_redis_writes_refused 0$/m);
  expect((await fetch(`${opsUrl}/readyz`)).status).toBe(200);
  for (const daemon of daemons) {
    const logs = daemon.logs();
    expect(logs.filter((line) => line.msg === REFUSED)).toHaveLength(1);
    expect(logs.filter((line) => line.msg === TAKEN)).toHaveLength(1);
    expect(logs.filter((line) => (line.level ?? 0) >= 50).map((line) => line.msg)).toEqual([]);
    // No storm: besides the two lines, a handful of warnings at most.
    expect(logs.filter((line) => (line.level ?? 0) >= 40 && line.msg !== REFUSED).length, logs.map((l) => l.msg).join('\n')).toBeLessThanOrEqual(3);
  }
});
