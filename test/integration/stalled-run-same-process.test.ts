/**
 * A job handed out again to the same process while its first run's request is still on the wire
 * (issue 44: the remaining double send of the loaded Sentinel failover sweep). After a failover
 * whose promoted replica missed the job lock's renewals, or a main thread starved past the lock,
 * BullMQ's stalled check puts the job back in wait, and the worker that runs it may take it again.
 * The second run's gate found the attempt record naming its own process and the document lock
 * naming its own job: it let the request go a second time, and the API accepted the label twice
 * (both as attempt 1). Now a second run of a job waits, in the process, for the first to end.
 *
 * The interleaving is forced with the daemon's own parts: a slow API keeps the first request on
 * the wire; the job's BullMQ lock is deleted (what the failover does) while it is; the stalled
 * check gives the job to the same worker again (the lock comes back with another token) before
 * the first answer. Real Redis, the sandbox over HTTP, one in-process daemon.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { createKeys } from '../../src/store/keys.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { dropFile, listFiles } from '../support/e2e-env.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

/** The first request stays on the wire this long: past the lock (2 s) and two stalled checks (1 s apart). */
const LATENCY_MS = 6000;

let running: TestDaemon | undefined;
let admin: Redis | undefined;
afterEach(async () => {
  admin?.disconnect();
  admin = undefined;
  await running?.stop();
  running = undefined;
});

it('a job taken again by its own process while its request is on the wire is not sent twice', { timeout: 60_000 }, async () => {
  running = await startTestDaemon({
    sandbox: { autoCreateDeliveries: true, faults: { latencyMs: LATENCY_MS } },
    settings: { delivery: { lockMs: 2000, concurrency: 4 } },
  });
  const t = running;
  admin = new Redis(testRedisUrl());
  const keys = createKeys(t.config.prefix);
  const deliveryId = randomUUID();
  await dropFile(join(t.spool, 'labels'), `${deliveryId}.pdf`, await makePdf(deliveryId));

  // The first run's request has left: its attempt record is written by the gate's 'go'.
  const attemptKey = await waitFor(async () => (await admin!.keys(`${keys.attemptOwner('label.')}${deliveryId}.*`))[0], {
    timeoutMs: 20_000,
    what: 'the attempt record of the first run',
  });
  const jobId = attemptKey.slice(keys.attemptOwner('').length);
  const lockKey = `${keys.bullPrefix}:label:${jobId}:lock`;
  const firstToken = await admin.get(lockKey);
  expect(firstToken, 'the first run holds the job lock').not.toBeNull();

  // The failover's doing: the lock is gone while the run still holds the job.
  await admin.del(lockKey);
  // The stalled check moves the job back to wait, and the same worker takes it again.
  await waitFor(
    async () => {
      const token = await admin!.get(lockKey);
      return token !== null && token !== firstToken;
    },
    { timeoutMs: 15_000, what: 'the job taken again by a second run' },
  );
  expect(
    t.sandbox.requests().filter((r) => r.endpoint === 'label'),
    'the first request is still on the wire',
  ).toEqual([]);

  // Both runs end: the job is completed (and removed), the file archived.
  await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1, { timeoutMs: 30_000, what: 'the label archived' });
  await waitFor(async () => (await admin!.exists(`${keys.bullPrefix}:label:${jobId}`)) === 0 && (await admin!.exists(attemptKey)) === 0, {
    timeoutMs: 30_000,
    what: 'the job finished and its attempt ended',
  });
  const accepted = t.sandbox.requests().filter((r) => r.endpoint === 'label' && r.deliveryId === deliveryId && r.status === 200);
  expect(accepted.length, 'label requests the API accepted').toBe(1);
});
