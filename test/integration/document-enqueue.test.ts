/**
 * Documents queued together share round trips (enqueue.ts batches them): each still gets its own
 * verdict, in the order the calls were made, exactly as one call at a time would give it.
 * Real Redis; a daemon with the watcher role only, so nothing is sent and the jobs stay queued.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { enqueueDocument } from '../../src/queue/enqueue.js';
import type { LabelJob } from '../../src/store/payloads.js';
import { documentGeneration } from '../../src/gate/document-record.js';
import { openContext } from '../../src/runtime/context.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

function label(deliveryId: string, contentId: string, mtimeMs: number): LabelJob {
  return {
    kind: 'label',
    deliveryId,
    externalId: null,
    pdfBase64: Buffer.from(`%PDF-1.4 ${contentId}\n%%EOF`).toString('base64'),
    byteLength: 20,
    origin: { source: 'spool', spoolId: 'test', fileName: `${deliveryId}.pdf`, contentId },
    receivedAt: new Date().toISOString(),
    generation: documentGeneration(mtimeMs, 1),
  };
}

describe('documents queued together', () => {
  it('each gets the verdict of its own call, in call order: newer queued, older superseded, a re-drop already queued', async () => {
    running = await startTestDaemon({ roles: ['watcher'] });
    const ctx = await openContext(running.config, createLogger({ level: 'silent' }), 'test');
    try {
      const [a, b] = [randomUUID(), randomUUID()];
      // One tick: one batch. a: t=2 queued, t=1 superseded (older than t=2), t=3 queued; b: alone.
      const first = await Promise.all([
        enqueueDocument(ctx.enqueueDeps, label(a, 'a2', 2000)),
        enqueueDocument(ctx.enqueueDeps, label(a, 'a1', 1000)),
        enqueueDocument(ctx.enqueueDeps, label(a, 'a3', 3000)),
        enqueueDocument(ctx.enqueueDeps, label(b, 'b1', 1000)),
      ]);
      expect(first.map((r) => r.result)).toEqual(['queued', 'superseded', 'queued', 'queued']);
      expect(first.map((r) => r.jobId)).toEqual([`label.${a}.a2`, `label.${a}.a1`, `label.${a}.a3`, `label.${b}.b1`]);
      // The same content claimed again (a newer claim of the same bytes): its job exists. And the
      // same new bytes twice in one batch: one job, the second call already queued.
      const again = await Promise.all([
        enqueueDocument(ctx.enqueueDeps, label(b, 'b1', 1500)),
        enqueueDocument(ctx.enqueueDeps, label(a, 'a4', 4000)),
        enqueueDocument(ctx.enqueueDeps, label(a, 'a4', 4001)),
      ]);
      expect(again.map((r) => r.result)).toEqual(['already-queued', 'queued', 'already-queued']);
      const queued = await ctx.queues.items.label.getJobs(['waiting']);
      expect(queued.map((job) => job.id).sort()).toEqual([`label.${a}.a2`, `label.${a}.a3`, `label.${a}.a4`, `label.${b}.b1`].sort());
      expect((await ctx.stats.read()).received.label).toBe(4);
    } finally {
      await ctx.closers.closeAll();
    }
  });

  it('a Redis connection that fails rejects every document of the batch, and none is queued by half', async () => {
    running = await startTestDaemon({ roles: ['watcher'] });
    const ctx = await openContext(running.config, createLogger({ level: 'silent' }), 'test');
    try {
      const id = randomUUID();
      ctx.enqueueDeps.redis.disconnect();
      const results = await Promise.allSettled([
        enqueueDocument(ctx.enqueueDeps, label(id, 'x1', 1000)),
        enqueueDocument(ctx.enqueueDeps, label(id, 'x2', 2000)),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await ctx.closers.closeAll();
    }
  });
});
