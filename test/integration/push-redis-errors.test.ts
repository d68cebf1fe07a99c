/**
 * A Redis error is never the API's refusal (issue 44 point 3). In a full-suite run of the Cluster
 * failover test, 35 labels went to failed/ as API_REJECTED with the reason `MOVED 7684 …`: a run of
 * each met the redirect, BullMQ spent an attempt on it, and after the last one the job was failed
 * with that message, read back by the in-flight reconcile as a dead letter.
 *
 * Here each Redis error is met in the push path of the real job processor (real Redis, the sandbox
 * over HTTP, BullMQ's own worker), with one attempt allowed, so a spent attempt would be a dead
 * letter. The errors are real: Redis' own replies to a command that fails (EVAL of an error reply),
 * a command on a closed ioredis connection, a socket a server reset. Each item meets its error once,
 * before its request (the gate's enter) or after the API answered (the answer's write), and must be
 * sent once and accepted, its file archived, nothing in the DLQ nor in failed/.
 *
 * Then a job BullMQ failed with a Redis error's message (as when its own moveToFinished meets
 * MOVED): the reconcile must not move its file to failed/, and the worker role puts it back to work.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/queue/bullmq.js';
import { createLogger } from '../../src/log.js';
import { openContext, type Context } from '../../src/runtime/context.js';
import { apiClientFor } from '../../src/runtime/api-client.js';
import { rateLimiterFor } from '../../src/gate/limiter.js';
import { createPushGate, pushGateOptions, type PushGate } from '../../src/gate/push-gate.js';
import { SELF_OWNER, ownerTiming } from '../../src/gate/attempt-owner.js';
import { createKeptAnswers } from '../../src/push/kept-answers.js';
import { isAnswerUnavailable } from '../../src/push/answer-write.js';
import { createProcessor } from '../../src/push/processor.js';
import { isRedisUnavailable } from '../../src/store/redis-health.js';
import type { ItemJob } from '../../src/store/payloads.js';
import { createKeys, type ItemKind } from '../../src/store/keys.js';
import { readJourney } from '../../src/journey/journey-read.js';
import { describeStep } from '../../src/journey/step-text.js';
import { contentIdOf, spoolPaths } from '../../src/spool/paths.js';
import { startDaemon } from '../../src/runtime/start.js';
import { documentJobId } from '../../src/queue/enqueue.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups.length = 0;
});

/** Redis' own error replies, as a Cluster, a replica or a restarting server sends them. */
const REPLIES = [
  'MOVED 7684 127.0.0.1:46093',
  'ASK 7684 127.0.0.1:46093',
  'TRYAGAIN Multiple keys request during rehashing of slot',
  'CLUSTERDOWN The cluster is down',
  'LOADING Redis is loading the dataset in memory',
  "READONLY You can't write against a read only replica.",
];
type Failure = { name: string; make: () => Promise<Error> };

/** A real failure for each error: thrown by a real command or socket, caught, and kept to throw again. */
async function realFailures(): Promise<Failure[]> {
  const replies = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  cleanups.push(async () => void replies.disconnect());
  const caught = async (run: () => Promise<unknown>): Promise<Error> => {
    try {
      await run();
    } catch (error) {
      return error as Error;
    }
    throw new Error('the command did not fail');
  };
  const failures: Failure[] = REPLIES.map((reply) => ({
    name: reply.split(' ')[0]!,
    make: () => caught(() => replies.eval('return redis.error_reply(ARGV[1])', 0, reply)),
  }));
  failures.push({
    name: 'Connection is closed',
    make: async () => {
      const closed = new Redis(testRedisUrl());
      await closed.quit();
      return caught(() => closed.get('x'));
    },
  });
  failures.push({
    name: 'ECONNRESET',
    make: async () => {
      // A server that resets every connection: the socket's own error.
      const server = net.createServer((socket) => socket.resetAndDestroy());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as net.AddressInfo;
        return await new Promise<Error>((resolve) => net.connect(port, '127.0.0.1').on('error', resolve));
      } finally {
        server.close();
      }
    },
  });
  return failures;
}

/**
 * The worker role's wiring (runtime/roles/worker-role.ts) around the real processor, with the gate's
 * enter or leave throwing an item's failure once, before doing its real work.
 */
type FailAt = 'enter' | 'leave' | 'enter-landed';

/**
 * `failOnce`: an item's failure, met once: before the gate's enter does its work ('enter'), after a
 * 'go' of it landed (its reply lost, 'enter-landed'), or before an accepted answer's leave ('leave').
 * `recordAtRerun`: for each 'enter-landed' job, whether its attempt record still existed when the
 * job's next run asked the gate.
 */
async function startWorkers(
  t: TestDaemon,
  failOnce: Map<string, { at: FailAt; failure: Failure }>,
  recordAtRerun = new Map<string, boolean>(),
): Promise<Context> {
  const logger = createLogger({ level: 'silent' });
  const ctx = await openContext(t.config, logger, 'test-worker');
  const target = { url: t.sandbox.url, carrierKey: Object.values(t.sandbox.keys.carriers)[0]!, sellerGroupKey: null, isSandbox: true };
  const client = apiClientFor(t.config, target, { logger });
  const kept = createKeptAnswers(isAnswerUnavailable(isRedisUnavailable), logger);
  const real = createPushGate(ctx.redis, ctx.keys, target.carrierKey, {
    ...pushGateOptions(t.config),
    owner: { self: SELF_OWNER, graceMs: ownerTiming(t.config.delivery.lockMs).graceMs },
  });
  const landed = new Set<string>();
  const fail = async (deliveryId: string, at: FailAt): Promise<void> => {
    const planned = failOnce.get(deliveryId);
    if (planned?.at !== at) return;
    failOnce.delete(deliveryId);
    throw await planned.failure.make();
  };
  const gate: PushGate = Object.assign(Object.create(real) as PushGate, {
    enter: async (...args: Parameters<PushGate['enter']>) => {
      const [item, jobId] = args;
      if (landed.delete(jobId)) recordAtRerun.set(jobId, (await ctx.redis.exists(ctx.keys.attemptOwner(jobId))) === 1);
      await fail(item.deliveryId, 'enter');
      const verdict = await real.enter(...args);
      if (verdict.action === 'go' && failOnce.get(item.deliveryId)?.at === 'enter-landed') {
        landed.add(jobId);
        await fail(item.deliveryId, 'enter-landed');
      }
      return verdict;
    },
    leave: async (...args: Parameters<PushGate['leave']>) => {
      // The answer of an accepted item (its result given): after the API answered.
      if (args[3] === 'accepted') await fail(args[0].deliveryId, 'leave');
      return real.leave(...args);
    },
  });
  const workers = (['label', 'collecting'] as ItemKind[]).map(
    (kind) =>
      new Worker<ItemJob>(
        kind,
        createProcessor({
          client,
          redis: ctx.redis,
          keys: ctx.keys,
          gate,
          limiter: rateLimiterFor(ctx, target.carrierKey),
          authGate: ctx.authGate,
          attempts: ctx.attempts,
          kept,
          stats: ctx.stats,
          queues: ctx.queues,
          delivery: t.config.delivery,
          clock: ctx.clock,
          logger,
        }),
        { connection: ctx.bullRedis, prefix: t.config.prefix, concurrency: 4, lockDuration: t.config.delivery.lockMs, autorun: true },
      ),
  );
  cleanups.push(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    kept.close();
    await client.close();
    await ctx.closers.closeAll();
  });
  return ctx;
}

const filesUnder = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true }).catch((): string[] => [])).map(String);

describe('a Redis error in the push path', () => {
  it('met before the request or after the answer, each kind is waited out: sent once, accepted, archived, never dead-lettered (one attempt allowed)', async () => {
    // The watcher in the daemon (claims, outcomes, reconcile); the workers here, with the failures.
    const t = await startTestDaemon({ roles: ['watcher'], sandbox: { autoCreateDeliveries: true }, settings: { delivery: { maxAttempts: 1 } } });
    cleanups.push(() => t.stop());
    const failures = await realFailures();
    const plan = new Map<string, { at: FailAt; failure: Failure }>();
    const labels: string[] = [];
    const events: Array<{ delivery_id: string; event_at: string }> = [];
    for (const failure of failures) {
      for (const at of ['enter', 'leave'] as const) {
        const labelDelivery = randomUUID();
        const eventDelivery = randomUUID();
        plan.set(labelDelivery, { at, failure });
        plan.set(eventDelivery, { at, failure });
        labels.push(labelDelivery);
        events.push({ delivery_id: eventDelivery, event_at: '2026-11-22T04:46:26Z' });
      }
    }
    // The errors are real: each one's text, as the processor will meet it.
    const made = await Promise.all(failures.map(async (failure) => (await failure.make()).message));
    expect(made.slice(0, REPLIES.length)).toEqual(REPLIES);
    expect(made.slice(REPLIES.length)).toEqual([expect.stringMatching(/^Connection is closed/), expect.stringMatching(/ECONNRESET/)]);

    const ctx = await startWorkers(t, plan);
    for (const id of labels) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await writeFile(join(t.spool, 'events', 'events.ndjson'), `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);

    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).filter((f) => /\.(pdf|ndjson)$/.test(f)).length === labels.length + 1, {
      what: 'every label and the events file archived',
      timeoutMs: 60_000,
    }).catch(async (error: Error) => {
      const failedJobs = await Promise.all(
        ['label', 'collecting'].map(async (kind) => (await ctx.queues.items[kind as ItemKind].getFailed()).map((j) => j.failedReason)),
      );
      throw new Error(`${error.message}; failed/: ${(await filesUnder(join(t.spool, 'failed'))).join(', ')}; failed jobs: ${failedJobs.flat().join(' | ')}`);
    });
    expect(plan.size, 'every planned failure was met').toBe(0);
    expect(await filesUnder(join(t.spool, 'failed', 'labels'))).toEqual([]);
    expect(await filesUnder(join(t.spool, 'failed', 'events'))).toEqual([]);
    for (const kind of ['label', 'collecting'] as const) expect(await ctx.queues.items[kind].getFailedCount(), `${kind} dead letters`).toBe(0);
    // Sent once each: one accepted request per label and per event.
    const ok = t.sandbox.requests().filter((r) => r.status === 200);
    expect(
      ok
        .filter((r) => r.endpoint === 'label')
        .map((r) => r.deliveryId)
        .sort(),
    ).toEqual([...labels].sort());
    expect(
      ok
        .filter((r) => r.endpoint === 'collecting')
        .map((r) => r.deliveryId)
        .sort(),
    ).toEqual(events.map((e) => e.delivery_id).sort());
  });

  it("an enter that landed but whose reply a cut connection lost leaves no attempt record behind: the next run finds none, and the item is sent once (the failover sweep's Sentinel seed 29)", async () => {
    // Without the release, the record names this live process for a request that never left, and a
    // run of the job in any other process waits on it for good ('owned').
    const t = await startTestDaemon({ roles: ['watcher'], sandbox: { autoCreateDeliveries: true }, settings: { delivery: { maxAttempts: 1 } } });
    cleanups.push(() => t.stop());
    const closed = (await realFailures()).find((failure) => failure.name === 'Connection is closed')!;
    const labels = [randomUUID(), randomUUID()];
    const eventDelivery = randomUUID();
    const plan = new Map<string, { at: FailAt; failure: Failure }>([...labels, eventDelivery].map((id) => [id, { at: 'enter-landed', failure: closed }]));
    const recordAtRerun = new Map<string, boolean>();
    await startWorkers(t, plan, recordAtRerun);
    for (const id of labels) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await writeFile(join(t.spool, 'events', 'events.ndjson'), `${JSON.stringify({ delivery_id: eventDelivery, event_at: '2026-11-22T04:46:26Z' })}\n`);

    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).filter((f) => /\.(pdf|ndjson)$/.test(f)).length === labels.length + 1, {
      what: 'both labels and the events file archived',
      timeoutMs: 60_000,
    });
    expect(plan.size, 'every planned failure was met').toBe(0);
    expect([...recordAtRerun.values()], 'the attempt record, at the next run of each job').toEqual([false, false, false]);
    const ok = t.sandbox.requests().filter((r) => r.status === 200);
    expect(ok.map((r) => `${r.endpoint} ${r.deliveryId}`).sort()).toEqual([...labels.map((id) => `label ${id}`), `collecting ${eventDelivery}`].sort());
    // The released attempt's answer, in the history, in the reader's language.
    const redis = new Redis(testRedisUrl());
    cleanups.push(async () => void redis.disconnect());
    const steps = await readJourney(redis, createKeys(t.config.prefix), labels[0]!, { retentionDays: 1, nowMs: Date.now() });
    const released = steps.filter((step) => step.step === 'attempt').map((step) => describeStep(step, 'pt-BR'));
    expect(released[0]).toMatch(/^tentativa 1 por .*: não enviado: veio um erro do Redis em vez da liberação para o envio: Connection is closed/);
    expect(released[1]).toMatch(/^tentativa 2 por .*: HTTP 200/);
  });

  it('jobs BullMQ failed with a Redis error (as when its own finish meets MOVED) are no dead letters: the reconcile leaves the file, the worker role puts them back to work, and they are accepted', async () => {
    const t = await startTestDaemon({ roles: ['watcher'], sandbox: { autoCreateDeliveries: true }, settings: { delivery: { maxAttempts: 1 } } });
    cleanups.push(() => t.stop());
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-moved');
    cleanups.push(() => ctx.closers.closeAll());
    // Workers of BullMQ's own whose runs end in a real MOVED reply: BullMQ fails each job with it.
    const replies = new Redis(testRedisUrl());
    cleanups.push(async () => void replies.disconnect());
    const movedWorkers = (['label', 'collecting'] as const).map(
      (kind) =>
        new Worker<ItemJob>(
          kind,
          async () => {
            await replies.eval('return redis.error_reply(ARGV[1])', 0, 'MOVED 7684 127.0.0.1:46093');
          },
          { connection: ctx.bullRedis, prefix: t.config.prefix, autorun: true },
        ),
    );
    const labelDelivery = randomUUID();
    const eventDelivery = randomUUID();
    const pdf = await makePdf(labelDelivery);
    await writeFile(join(t.spool, 'labels', `${labelDelivery}.pdf`), pdf);
    await writeFile(join(t.spool, 'events', 'events.ndjson'), `${JSON.stringify({ delivery_id: eventDelivery, event_at: '2026-11-22T04:46:26Z' })}\n`);
    const failedReasons = async (): Promise<string[]> =>
      (
        await Promise.all((['label', 'collecting'] as const).map(async (kind) => (await ctx.queues.items[kind].getFailed()).map((job) => job.failedReason)))
      ).flat();
    await waitFor(async () => (await failedReasons()).length === 2, { what: 'both jobs failed by MOVED' });
    await Promise.all(movedWorkers.map((worker) => worker.close()));
    expect(await failedReasons()).toEqual(['MOVED 7684 127.0.0.1:46093', 'MOVED 7684 127.0.0.1:46093']);
    const jobId = documentJobId({ kind: 'label', deliveryId: labelDelivery, origin: { contentId: contentIdOf(pdf) } } as Parameters<typeof documentJobId>[0]);

    // The watcher starts again: its reconcile finds the label in flight and its job failed. Not a
    // dead letter: the job goes back to work, the file stays in flight.
    await t.restart();
    await waitFor(async () => (await ctx.queues.items.label.getJobState(jobId)) !== 'failed', { what: 'the label job put back to work by the reconcile' });
    expect(await filesUnder(join(t.spool, 'failed'))).toEqual(expect.not.arrayContaining([expect.stringContaining(labelDelivery)]));
    expect((await readdir(spoolPaths(t.spool, t.config.spool.id).inflight('labels'))).some((name) => name.endsWith(`${labelDelivery}.pdf`))).toBe(true);

    // A worker role starts (the daemon's own): it puts the event's job back to work too, and both are sent.
    const logger = createLogger({ level: 'silent' });
    const worker = startDaemon(t.config, ['worker'], logger);
    cleanups.push(() => worker.stop());
    await worker.ready;
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).filter((f) => /\.(pdf|ndjson)$/.test(f)).length === 2, {
      what: 'the label and the events file archived',
      timeoutMs: 30_000,
    });
    expect(await filesUnder(join(t.spool, 'failed', 'labels'))).toEqual([]);
    expect(await filesUnder(join(t.spool, 'failed', 'events'))).toEqual([]);
    const ok = t.sandbox.requests().filter((r) => r.status === 200);
    expect(ok.map((r) => `${r.endpoint} ${r.deliveryId}`).sort()).toEqual([`collecting ${eventDelivery}`, `label ${labelDelivery}`].sort());
  });
});
