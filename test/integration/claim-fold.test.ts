/**
 * The claim side in one script call (issue 46, queue/claim-scripts.ts): a batch of documents is one
 * `claimDocuments` call (order verdicts, job-exists checks and the journey's claimed steps), a run
 * of events one `claimEvents` call (claims, the event order of those queued, the journey's received
 * steps, each step only for the claim it tells). Counted from Redis' own side (MONITOR on a
 * redis-server of this file's own), and what the call left read back: the records, the event
 * order and the journey as the history reads them.
 */
import { randomUUID } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { collectingJobId, enqueueDocument, enqueueEvents } from '../../src/queue/enqueue.js';
import type { CollectingJob, LabelJob } from '../../src/store/payloads.js';
import { documentGeneration } from '../../src/gate/document-record.js';
import { openContext } from '../../src/runtime/context.js';
import { readJourney, findBySha256 } from '../../src/journey/journey-read.js';
import { recordMonitor, scriptNames, tally, type MonitorLine, type Recorder } from '../bench/support/monitor.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

let own: OwnRedis;
let running: TestDaemon | undefined;
beforeAll(async () => {
  own = await startOwnRedis();
});
afterEach(async () => {
  await running?.stop();
  running = undefined;
});
afterAll(async () => {
  await own.close();
});

type Context = Awaited<ReturnType<typeof openContext>>;

/** The top-level commands (and their scripts' inner ones) one connection sent while `work` ran. */
async function commandsOf(ctx: Context, work: () => Promise<unknown>): Promise<ReturnType<typeof tally>> {
  const recorder: Recorder = await recordMonitor(own.url, await scriptNames());
  try {
    const redis = ctx.enqueueDeps.redis as Redis;
    await redis.ping();
    const source = `127.0.0.1:${redis.stream.localPort ?? 0}`;
    await work();
    const marker = `claim-fold-${randomUUID()}`;
    await redis.echo(marker);
    await waitFor(() => recorder.lines.some((l) => l.source === source && l.name === 'echo'), { timeoutMs: 5000, what: 'the marker in MONITOR' });
    const mine: MonitorLine[] = [];
    let isMine = false;
    for (const line of recorder.lines) {
      if (line.source !== 'lua') isMine = line.source === source;
      if (isMine) mine.push(line);
    }
    return tally(mine);
  } finally {
    await recorder.stop();
  }
}

const calls = (t: ReturnType<typeof tally>, name: string): number => (t.byTopLevel.get(`evalsha ${name}`) ?? 0) + (t.byTopLevel.get(`eval ${name}`) ?? 0);

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

function event(deliveryId: string, epochMs: number, sourceId: string, batchId: string, line: number, fileName = 'events-a.ndjson'): CollectingJob {
  const eventAt = new Date(epochMs).toISOString();
  return {
    kind: 'collecting',
    deliveryId,
    eventAt,
    wire: eventAt,
    instantKey: String(epochMs),
    epochMs,
    sourceId,
    origin: { source: 'spool', spoolId: 'test', fileName, batchId, line },
    receivedAt: new Date().toISOString(),
  };
}

const SHA = 'ab'.repeat(32);

describe('the claim in one script call', () => {
  it('a batch of documents: one claimDocuments call, verdicts as before, the claimed steps in the journey', async () => {
    running = await startTestDaemon({ roles: ['watcher'], env: { REDIS_URL: own.url } });
    const ctx = await openContext(running.config, createLogger({ level: 'silent' }), 'test');
    try {
      const [a, b] = [randomUUID(), randomUUID()];
      const seen = { sha256: SHA, size: 20, mtimeMs: 2000 };
      let results: Array<{ result: string }> = [];
      const t = await commandsOf(ctx, async () => {
        results = await Promise.all([
          enqueueDocument(ctx.enqueueDeps, label(a, 'a2', 2000), seen),
          enqueueDocument(ctx.enqueueDeps, label(a, 'a1', 1000), seen),
          enqueueDocument(ctx.enqueueDeps, label(b, 'b1', 1000), seen),
        ]);
      });
      expect(results.map((r) => r.result)).toEqual(['queued', 'superseded', 'queued']);
      // Before: a queueDocument call a document and a pipeline of EXISTS a document + journeyAppend.
      expect(calls(t, 'claimDocuments')).toBe(1);
      expect(calls(t, 'queueDocument')).toBe(0);
      expect(t.byTopLevel.get('exists') ?? 0).toBe(0);
      // Inside: the job-exists check of each document the order lets through, 2 of 3.
      expect(t.byScript.get('claimDocuments')?.commands.get('exists')).toBe(2);
      // The claimed (seen) step of each of the three, and the sha index, as the history reads them.
      const window = { retentionDays: 30, nowMs: Date.now() };
      const journeyA = await readJourney(ctx.redis, ctx.keys, a, window);
      expect(journeyA.filter((s) => s.step === 'seen').length).toBe(2);
      expect(journeyA.map((s) => s.step)).toEqual(expect.arrayContaining(['seen', 'queued', 'superseded']));
      expect((await readJourney(ctx.redis, ctx.keys, b, window)).map((s) => s.step)).toEqual(expect.arrayContaining(['seen', 'queued']));
      const bySha = await findBySha256(ctx.redis, ctx.keys, SHA.slice(0, 16), 30, Date.now());
      expect(new Set(bySha.map((s) => s.delivery_id))).toEqual(new Set([a, b]));
      // A job that exists: the script says so, and the document goes on alone (already queued).
      const again = await enqueueDocument(ctx.enqueueDeps, label(b, 'b1', 1500));
      expect(again.result).toBe('already-queued');
    } finally {
      await ctx.closers.closeAll();
    }
  });

  it('events: one claimEvents call; the event order and the journey only for the claims they tell', async () => {
    running = await startTestDaemon({ roles: ['watcher'], env: { REDIS_URL: own.url } });
    const ctx = await openContext(running.config, createLogger({ level: 'silent' }), 'test');
    try {
      const d = randomUUID();
      const base = Date.UTC(2026, 0, 1);
      const future = Date.now() + 3_600_000;
      // An earlier source's claim of one instant (duplicate for this file), and this file's own
      // claim of another, already sent, in the earlier layout (`dedup:<delivery>`: instant → done:<source>).
      await enqueueEvents(ctx.enqueueDeps, [event(d, base + 1000, 'other-file:1', 'b0'.repeat(32), 1, 'events-0.ndjson')]);
      await ctx.redis.hset(ctx.keys.dedup(d), String(base + 3000), 'done:this-file:3');
      const file = 'cd'.repeat(32);
      let result: Awaited<ReturnType<typeof enqueueEvents>> | undefined;
      const t = await commandsOf(ctx, async () => {
        result = await enqueueEvents(ctx.enqueueDeps, [
          event(d, base + 1000, 'this-file:1', file, 1), // duplicate of other-file:1
          event(d, base + 2000, 'this-file:2', file, 2), // new
          event(d, base + 3000, 'this-file:3', file, 3), // sent before: not queued, no step
          event(d, future, 'this-file:4', file, 4), // new, held until due
        ]);
      });
      expect(result?.duplicates.map((x) => x.index).sort()).toEqual([0, 2]);
      expect(result?.alreadySent.map((x) => x.index)).toEqual([2]);
      // Before: a dedupClaim call an event, then a pipeline of ZADD an event queued + journeyAppend.
      expect(calls(t, 'claimEvents')).toBe(1);
      expect(calls(t, 'dedupClaim')).toBe(0);
      expect(calls(t, 'journeyAppend')).toBe(0);
      expect(t.byTopLevel.get('zadd') ?? 0).toBe(0);
      // The event order holds the queued events only (the first file's and the two new ones).
      const order = await ctx.redis.zrange(ctx.keys.eventOrder(d), 0, -1);
      expect(order.sort()).toEqual(
        [collectingJobId(d, String(base + 1000)), collectingJobId(d, String(base + 2000)), collectingJobId(d, String(future))].sort(),
      );
      // The journey: received for every event of this file but the sent one, duplicate for the
      // duplicate, held for the future one.
      const steps = await readJourney(ctx.redis, ctx.keys, d, { retentionDays: 30, nowMs: Date.now() });
      const ofFile = steps.filter((s) => s.step !== 'received' || s.file === 'events-a.ndjson');
      expect(ofFile.filter((s) => s.step === 'received').length).toBe(3);
      expect(steps.filter((s) => s.step === 'duplicate').length).toBe(1);
      expect(steps.filter((s) => s.step === 'held').length).toBe(1);
      expect(steps.filter((s) => s.step === 'received').length).toBe(4);
    } finally {
      await ctx.closers.closeAll();
    }
  });

  it("an events file's lines are marked done in their batch by the gate's leave: no batchMarkDone call of their own", async () => {
    running = await startTestDaemon({ roles: ['watcher', 'worker'], env: { REDIS_URL: own.url }, sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const recorder = await recordMonitor(own.url, await scriptNames());
    try {
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      await writeFile(
        join(t.spool, 'events', 'marked.ndjson'),
        ids.map((id) => JSON.stringify({ delivery_id: id, event_at: '2026-05-01T10:00:00Z' })).join('\n') + '\n',
      );
      await waitFor(async () => (await readdir(join(t.spool, 'archive'), { recursive: true })).some((f) => String(f).endsWith('marked.ndjson')), {
        timeoutMs: 30_000,
        what: 'the events file archived',
      });
      const tallied = tally(recorder.lines);
      // Before: one batchMarkDone an event, the outcome consumer's.
      expect(calls(tallied, 'batchMarkDone')).toBe(0);
      expect(calls(tallied, 'gateLeaveEvent')).toBe(3);
      expect(tallied.byScript.get('gateLeaveEvent')?.commands.get('sadd')).toBe(3);
      expect(t.sandbox.requests().filter((r) => r.endpoint === 'collecting' && r.status === 200).length).toBe(3);
    } finally {
      await recorder.stop();
    }
  });
});
