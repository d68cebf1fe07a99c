/**
 * A claim whose job Redis lost (a failover's lagging replica, a restart without persistence) is
 * taken up again soon after the Redis episode ends, not after the periodic reconcile's minute
 * (spool/session.ts, reconcileAfterRecovery). The failover sweep saw a label wait in `.inflight/`
 * for that minute. Here: a watcher-only daemon (no worker, so the job waits) on a redis-server of
 * the test's own; the label's job is removed, as a lost write would leave it, and Redis restarted.
 */
import { randomUUID } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';

const UNREACHABLE = 'Redis unreachable: waiting for it to come back (one line when it does)';
const REACHABLE = 'Redis reachable again';

let own: OwnRedis | undefined;
let running: TestDaemon | undefined;
let admin: RedisConnection | undefined;
let queues: QueueSet | undefined;

afterAll(async () => {
  await running?.stop();
  await queues?.close();
  if (admin !== undefined) await closeRedis(admin);
  await own?.close();
});

it('queues a claim whose job was lost again within seconds of Redis coming back', { timeout: 60_000 }, async () => {
  own = await startOwnRedis();
  // A lease long enough that the restart does not cost it (a new holder's start would reconcile everything anyway).
  const logs: Array<Record<string, unknown>> = [];
  running = await startTestDaemon({
    roles: ['watcher'],
    env: { REDIS_URL: own.url },
    settings: { spool: { leaseMs: 30_000, holderFileMs: 120_000 } },
    logLines: logs,
  });
  admin = connectRedis(own.url, 'reconcile-after-recovery');
  queues = openQueues(admin, running.prefix, loadConfig({ env: {} }).delivery);
  // The test's own connection sees the outage too: quietly.
  admin.on('error', () => undefined);
  for (const queue of [...Object.values(queues.items), queues.housekeeping]) queue.on('error', () => undefined);
  const labels = queues.items.label;
  const queued = async (): Promise<string[]> => (await labels.getJobs(['waiting', 'prioritized', 'delayed'])).map((job) => job.id ?? '');

  const deliveryId = randomUUID();
  await writeFile(join(running.spool, 'labels', `${deliveryId}.pdf`), await makePdf('lost with the old primary'));
  const [jobId] = await waitFor(async () => ((await queued()).length === 1 ? await queued() : null), { timeoutMs: 15_000, what: 'the label queued' });
  const inflight = await readdir(join(running.spool, '.inflight', 'labels'));
  expect(inflight).toHaveLength(1);

  // The write lost: the job is gone, the file is in flight; then Redis goes away and comes back.
  await labels.remove(jobId!);
  expect(await labels.getJobState(jobId!)).toBe('unknown');
  // Down until the daemon has told the outage (a restart quicker than its reconnect would go unseen).
  await own.stop();
  await waitFor(() => logs.some((line) => line['msg'] === UNREACHABLE), { timeoutMs: 15_000, what: 'the daemon telling Redis unreachable' });
  await own.start();
  await waitFor(() => logs.some((line) => line['msg'] === REACHABLE), { timeoutMs: 15_000, what: 'the daemon telling Redis back' });

  // Within the recovery's settle time (5 s) and a margin, far from the periodic reconcile's minute.
  await waitFor(async () => (await labels.getJobState(jobId!)) !== 'unknown', { timeoutMs: 20_000, what: 'the label queued again after the restart' });
  expect(await queued()).toEqual([jobId]);
  expect(await readdir(join(running.spool, '.inflight', 'labels'))).toEqual(inflight);
});
