/**
 * A sealed batch that cannot complete is finished job by job (issue 44). After a Sentinel failover
 * an events file stayed in `.inflight/` for good, every event accepted: the batch's done set lacked
 * a job (the failover lost its mark), and the reconcile left a sealed, incomplete batch alone.
 *
 * The state is made with the daemon's own parts, with the daemon stopped: an events file in flight
 * with three events (three deliveries), its batch sealed with their three jobs, and:
 *   - A: sent (its claim marked done by the gate's leave), its job gone, not marked done in the batch;
 *   - B: lost (its claim this file's, not sent; its job gone), not marked done;
 *   - C: sent, gone and marked done, as it should be.
 * The reconcile, once the batch has made no progress for its bound, marks A done (its claim says it
 * was sent: never sent again) and queues B again; the daemon then sends B once and the file is
 * archived. Before, the reconcile left the batch alone and the file never left `.inflight/`.
 * Real Redis, the sandbox over HTTP, real files and the real file checks.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createLogger, silentLogger } from '../../src/log.js';
import { createPushGate, pushGateOptions } from '../../src/gate/push-gate.js';
import { collectingJobId, enqueueEvents } from '../../src/queue/enqueue.js';
import { collectingJobOf } from '../../src/store/payloads.js';
import { openContext } from '../../src/runtime/context.js';
import { startDaemon } from '../../src/runtime/start.js';
import type { ClaimDeps } from '../../src/spool/claim.js';
import { loadInflightIndex } from '../../src/spool/inflight-index.js';
import { readSpoolIdFile } from '../../src/spool/lease/spool-id.js';
import { inflightName, newClaimId, spoolPaths } from '../../src/spool/paths.js';
import { reconcileInflight } from '../../src/spool/reconcile.js';
import { parseEventsFile } from '../../src/validate/events-file.js';
import { createCheckPool } from '../../src/validate/pool/check-pool.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

const ROLES = ['watcher', 'worker'] as const;
const FILE = 'stuck.ndjson';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

it(
  'a sealed batch that cannot complete: a sent job is marked done, a lost one queued again and sent once; the file is archived',
  { timeout: 60_000 },
  async () => {
    running = await startTestDaemon({ roles: [...ROLES], sandbox: { autoCreateDeliveries: true } });
    const t = running;
    await t.daemon.stop();

    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const at = '2026-11-20T10:00:00Z';
    const bytes = Buffer.from([a, b, c].map((id) => JSON.stringify({ delivery_id: id, event_at: at })).join('\n') + '\n');
    const claimId = newClaimId(bytes);
    const name = inflightName(claimId, FILE);
    await mkdir(join(t.spool, '.inflight', 'events'), { recursive: true });
    await writeFile(join(t.spool, '.inflight', 'events', name), bytes);
    const spoolId = (await readSpoolIdFile(t.spool))!;

    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-stuck');
    const checks = createCheckPool(t.config.checks, silentLogger);
    try {
      const { records } = parseEventsFile(bytes.toString('utf8'), 'ndjson', { maxLineBytes: t.config.spool.maxEventLineBytes });
      const receivedAt = new Date().toISOString();
      const jobs = records.map((record) =>
        collectingJobOf(
          record,
          `file:${claimId}:${record.line}`,
          { source: 'spool', spoolId, fileName: FILE, batchId: claimId, line: record.line },
          receivedAt,
        ),
      );
      const [jobA, jobB, jobC] = jobs as [(typeof jobs)[0], (typeof jobs)[0], (typeof jobs)[0]];
      const [idA, idB, idC] = [jobA, jobB, jobC].map((job) => collectingJobId(job.deliveryId, job.instantKey)) as [string, string, string];
      expect((await enqueueEvents(ctx.enqueueDeps, jobs)).jobIds).toHaveLength(3);
      expect(await ctx.batches.seal({ batchId: claimId, inflightName: name, fileName: FILE, rejects: [], duplicates: 0 }, [idA, idB, idC])).toBe(false);
      // A and C were sent and answered (their claims marked done); only C's mark reached the batch.
      const gate = createPushGate(ctx.redis, ctx.keys, t.config.api.carrierKey ?? '', pushGateOptions(t.config));
      for (const [job, id] of [
        [jobA, idA],
        [jobC, idC],
      ] as const)
        await gate.leave(job, id, null, 'accepted');
      expect(await ctx.batches.markDone(claimId, idC)).toBe(false);
      // Every job gone: A and C finished (removed, as completed jobs are), B lost to the failover.
      for (const id of [idA, idB, idC]) await ctx.queues.items.collecting.remove(id);

      const index = await loadInflightIndex(spoolPaths(t.spool, spoolId));
      const unexpected = (): never => {
        throw new Error('the file moved before its batch completed');
      };
      let now = Date.now();
      const deps: ClaimDeps = {
        paths: spoolPaths(t.spool, spoolId),
        spool: t.config.spool,
        enqueue: ctx.enqueueDeps,
        batches: ctx.batches,
        sink: { reject: unexpected, archive: unexpected, finishBatch: unexpected },
        isOwner: () => true,
        track: (kind, trackedName) => index.track(kind, trackedName),
        untrack: (kind, trackedName) => index.forget(kind, trackedName),
        checks,
        clock: { now: () => now },
        logger: silentLogger,
      };
      // First seen incomplete: left alone for the bound; then finished job by job.
      expect(await reconcileInflight(deps, index, silentLogger, Number.POSITIVE_INFINITY, 30_000)).toEqual({ resumed: 0, settled: 0 });
      expect(await ctx.queues.items.collecting.getJobState(idB)).toBe('unknown');
      now += 30_000;
      expect(await reconcileInflight(deps, index, silentLogger, Number.POSITIVE_INFINITY, 30_000)).toEqual({ resumed: 1, settled: 0 });
      expect(await ctx.batches.unfinished(claimId), 'A marked done by its claim; B left to its new job').toEqual([idB]);
      expect(await ctx.queues.items.collecting.getJobState(idB)).toBe('waiting');
      expect(await ctx.queues.items.collecting.getJobState(idA), 'A is not queued again').toBe('unknown');
    } finally {
      await checks.close();
      await ctx.closers.closeAll();
    }

    t.daemon = startDaemon(t.config, [...ROLES], createLogger({ level: 'silent' }));
    await t.daemon.ready;
    await waitFor(
      async () => (await readdir(join(t.spool, 'archive', 'events'), { recursive: true }).catch((): string[] => [])).some((entry) => entry.endsWith(FILE)),
      {
        what: 'the events file archived',
        timeoutMs: 30_000,
      },
    );
    expect(
      t.sandbox
        .requests()
        .filter((r) => r.endpoint === 'collecting')
        .map((r) => r.deliveryId),
    ).toEqual([b]);
    expect(await readdir(join(t.spool, '.inflight', 'events'))).toEqual([]);
  },
);
