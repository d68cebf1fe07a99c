/**
 * An events file taken up again after a crash that came after some of its events were sent but
 * before the file's batch was sealed (kill -9 while a large file was still being queued: its first
 * jobs run at once). Its sent events are its own, finished — not duplicates, never sent again —
 * and the file leaves the in-flight folder only once every other event of it is answered. Before,
 * the sent ones were left out of the batch while its done set counted them: the file was archived
 * as many events early as had been sent (test/e2e/kill9.test.ts saw one delivery's last three
 * events unsent when its file was archived).
 *
 * The crash's state is made with the daemon's own parts: the file in flight, its events queued
 * (claims, chain, jobs), the first one sent (the gate's leave marks its claim done; its job is
 * gone, as a completed job is) and counted done in the batch, which was never sealed.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createPushGate, pushGateOptions } from '../../src/gate/push-gate.js';
import { collectingJobId, enqueueEvents } from '../../src/queue/enqueue.js';
import { collectingJobOf } from '../../src/store/payloads.js';
import { openContext } from '../../src/runtime/context.js';
import { startDaemon } from '../../src/runtime/start.js';
import { readSpoolIdFile } from '../../src/spool/lease/spool-id.js';
import { inflightName, newClaimId } from '../../src/spool/paths.js';
import { parseEventsFile } from '../../src/validate/events-file.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

const ROLES = ['watcher', 'worker'] as const;
const FILE = 'resume.ndjson';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

it('counts the events it sent before the crash as its own, sends the others once, and archives the file only after the last answer', async () => {
  // Slow answers: the next event of the delivery goes only after the answer to the one before.
  running = await startTestDaemon({ roles: [...ROLES], sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 150 } } });
  const t = running;
  await t.daemon.stop();

  const delivery = randomUUID();
  const instants = ['2026-11-20T10:00:00Z', '2026-11-20T10:01:00Z', '2026-11-20T10:02:00Z', '2026-11-20T10:03:00Z'];
  const bytes = Buffer.from(instants.map((at) => JSON.stringify({ delivery_id: delivery, event_at: at })).join('\n') + '\n');
  const claimId = newClaimId(bytes);
  await mkdir(join(t.spool, '.inflight', 'events'), { recursive: true });
  await writeFile(join(t.spool, '.inflight', 'events', inflightName(claimId, FILE)), bytes);

  const spoolId = await readSpoolIdFile(t.spool);
  expect(spoolId).not.toBeNull();
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-crash');
  try {
    const { records } = parseEventsFile(bytes.toString('utf8'), 'ndjson', { maxLineBytes: t.config.spool.maxEventLineBytes });
    const receivedAt = new Date().toISOString();
    const jobs = records.map((record) =>
      collectingJobOf(
        record,
        `file:${claimId}:${record.line}`,
        { source: 'spool', spoolId: spoolId!, fileName: FILE, batchId: claimId, line: record.line },
        receivedAt,
      ),
    );
    const queued = await enqueueEvents(ctx.enqueueDeps, jobs);
    expect(queued.jobIds).toHaveLength(instants.length);
    const first = jobs[0]!;
    const firstId = collectingJobId(first.deliveryId, first.instantKey);
    // The first event was sent and answered: its claim is done, its job gone, the batch has it done.
    await createPushGate(ctx.redis, ctx.keys, t.config.api.carrierKey ?? '', pushGateOptions(t.config)).leave(first, firstId, null, 'accepted');
    await ctx.queues.items.collecting.remove(firstId);
    expect(await ctx.batches.markDone(claimId, firstId)).toBe(false);

    // Taken in again, the sent one is this source's own: not queued, and no duplicate.
    const again = await enqueueEvents(ctx.enqueueDeps, jobs);
    expect(again.alreadySent).toEqual([{ index: 0, jobId: firstId }]);
    expect(again.jobIds).toEqual(queued.jobIds.filter((id) => id !== firstId));
  } finally {
    await ctx.closers.closeAll();
  }

  t.daemon = startDaemon(t.config, [...ROLES], createLogger({ level: 'silent' }));
  await t.daemon.ready;
  const recorded = (): string[] => (t.sandbox.state.deliveries.get(delivery)?.events ?? []).map((event) => new Date(event.event_at).toISOString());
  const archived = await waitFor(
    async () => {
      const names = await readdir(join(t.spool, 'archive', 'events'), { recursive: true }).catch((): string[] => []);
      // Read the API's record the moment the file is seen archived.
      return names.some((name) => name.endsWith(FILE)) ? { recorded: recorded() } : null;
    },
    { what: 'the events file archived', timeoutMs: 30_000, intervalMs: 5 },
  );
  const expected = instants.slice(1).map((at) => new Date(at).toISOString());
  expect(archived.recorded, 'every event but the one sent before the crash, answered before the file left').toEqual(expected);
  expect(t.sandbox.requests().filter((r) => r.endpoint === 'collecting' && r.deliveryId === delivery)).toHaveLength(expected.length);
  expect(await readdir(join(t.spool, 'failed', 'events')).catch((): string[] => [])).toEqual([]);
});

it('a batch is complete only when every one of its jobs is done, whatever its done set holds besides; the start reconcile then finishes its file', async () => {
  running = await startTestDaemon({ roles: [...ROLES] });
  const t = running;
  await t.daemon.stop();
  const bytes = Buffer.from(`${JSON.stringify({ delivery_id: randomUUID(), event_at: '2026-11-20T10:00:00Z' })}\n`);
  const claimId = newClaimId(bytes);
  const name = inflightName(claimId, FILE);
  await mkdir(join(t.spool, '.inflight', 'events'), { recursive: true });
  await writeFile(join(t.spool, '.inflight', 'events', name), bytes);

  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-batch');
  try {
    const { batches } = ctx;
    // A job that finished before the seal and is not among the sealed ones (the done set's extra).
    expect(await batches.markDone(claimId, 'collecting.extra')).toBe(false);
    expect(await batches.seal({ batchId: claimId, inflightName: name, fileName: FILE, rejects: [], duplicates: 0 }, ['collecting.a', 'collecting.b'])).toBe(
      false,
    );
    // As many done as sealed, but not the sealed ones: not complete (counting alone said it was).
    expect(await batches.markDone(claimId, 'collecting.a')).toBe(false);
    expect(await batches.isComplete(claimId)).toBe(false);
    expect(await batches.markDone(claimId, 'collecting.b')).toBe(true);
    expect(await batches.isComplete(claimId)).toBe(true);
  } finally {
    await ctx.closers.closeAll();
  }

  // Its outcome never closed the file (a crash right then): the start's reconcile does.
  t.daemon = startDaemon(t.config, [...ROLES], createLogger({ level: 'silent' }));
  await t.daemon.ready;
  await waitFor(
    async () => (await readdir(join(t.spool, 'archive', 'events'), { recursive: true }).catch((): string[] => [])).some((entry) => entry.endsWith(FILE)),
    {
      what: 'the file archived by the reconcile',
      timeoutMs: 15_000,
    },
  );
  expect(await readdir(join(t.spool, '.inflight', 'events'))).toEqual([]);
});
