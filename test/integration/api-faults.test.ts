/**
 * What the daemon does when the API pushes back: 429 pauses sending without spending attempts or
 * dead-lettering; 401 pauses the queues once, turns /readyz red, and waits for `resume`.
 */
import { randomUUID } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { readActivity } from '../../src/store/activity.js';
import { listDeadLetters } from '../../src/queue/dead-letter.js';
import { openContext } from '../../src/runtime/context.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const archivedCount = async (t: TestDaemon): Promise<number> =>
  (await readdir(join(t.spool, 'archive', 'labels'), { recursive: true })).filter((f) => String(f).endsWith('.pdf')).length;

async function withCtx<T>(t: TestDaemon, run: (ctx: Awaited<ReturnType<typeof openContext>>) => Promise<T>): Promise<T> {
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
  try {
    return await run(ctx);
  } finally {
    await ctx.closers.closeAll();
  }
}

describe('API push-back', () => {
  it('an API unavailable past the attempts keeps the items out of the dead letters for maxUnavailableMs: sent once it is back, dead-lettered only after', async () => {
    const budgetMs = 2500;
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { delivery: { maxAttempts: 2, maxUnavailableMs: budgetMs } } });
    const t = running;
    // One label at a time: a 503 the sandbox injects comes before it reads the request (no delivery id in its log).
    const labelRequests = () => t.sandbox.requests().filter((r) => r.endpoint === 'label');
    t.sandbox.setFaults({ errorRate: 1 });
    const back = randomUUID();
    await writeFile(join(t.spool, 'labels', `${back}.pdf`), await makePdf(back));
    // Past its two attempts, still tried (more requests than attempts), and not dead-lettered: the API is only unavailable.
    await waitFor(() => labelRequests().length >= 4, { what: 'more requests than attempts' });
    await withCtx(t, async (ctx) => expect(await listDeadLetters(ctx)).toEqual([]));
    t.sandbox.setFaults({ errorRate: 0 });
    await waitFor(async () => (await archivedCount(t)) === 1, { what: 'the label archived once the API is back' });
    expect(
      labelRequests()
        .filter((r) => r.status === 200)
        .map((r) => r.deliveryId),
    ).toEqual([back]);

    // The API never comes back for this one: dead-lettered, but not before the budget ran out.
    t.sandbox.setFaults({ errorRate: 1 });
    const before = labelRequests().length;
    const never = randomUUID();
    await writeFile(join(t.spool, 'labels', `${never}.pdf`), await makePdf(never));
    await waitFor(async () => (await readdir(join(t.spool, 'failed', 'labels'))).includes(`${never}.pdf`), {
      what: 'the label dead-lettered',
      timeoutMs: 20_000,
    });
    const requests = labelRequests().slice(before);
    // The attempts' two, then tries through the budget, the last one at least budgetMs after the second.
    expect(requests.length).toBeGreaterThan(2);
    expect(requests.at(-1)!.at - requests[1]!.at).toBeGreaterThanOrEqual(budgetMs);
    await withCtx(t, async (ctx) => expect((await listDeadLetters(ctx)).map((d) => d.deliveryId)).toEqual([never]));
  });

  it('a 429 storm with Retry-After: 1 holds every item back, spends no attempt and dead-letters nothing', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { delivery: { maxAttempts: 2 } } });
    const t = running;
    // The storm lasts until the first 429 was answered, then one more second (however slowly the
    // files were taken in).
    t.sandbox.setFaults({ rateLimitStormUntil: Date.now() + 600_000, stormRetryAfterSec: 1 });
    const ids = Array.from({ length: 6 }, () => randomUUID());
    for (const id of ids) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await waitFor(() => t.sandbox.requests().some((r) => r.status === 429), { what: 'the first 429' });
    const stormEnds = Date.now() + 1000;
    t.sandbox.setFaults({ rateLimitStormUntil: stormEnds });
    await waitFor(async () => (await archivedCount(t)) === ids.length, { what: 'all labels archived after the storm' });
    const labels = t.sandbox.requests().filter((r) => r.endpoint === 'label');
    const tooMany = labels.filter((r) => r.status === 429);
    expect(tooMany.length).toBeGreaterThan(0);
    // One pause for everyone: far fewer 429s than a per-item retry loop would cause.
    expect(tooMany.length).toBeLessThanOrEqual(ids.length * 2);
    expect(labels.filter((r) => r.status === 200).every((r) => r.at >= stormEnds)).toBe(true);
    await withCtx(t, async (ctx) => {
      expect(await listDeadLetters(ctx)).toEqual([]);
      expect((await ctx.stats.read()).rate_limited.label).toBeGreaterThan(0);
      // The overview's per-minute buckets saw the same 429s.
      const minutes = await readActivity(ctx.redis, ctx.keys, Date.now(), 5);
      expect(minutes.reduce((sum, m) => sum + (m.fields['rate_limited'] ?? 0), 0)).toBe((await ctx.stats.read()).rate_limited.label);
    });
  });

  it('a 401 pauses the queues once, turns /readyz red, keeps every item, and resumes on `resume`', async () => {
    running = await startTestDaemon({
      roles: ['watcher', 'worker', 'http'],
      sandbox: { autoCreateDeliveries: true, faults: { unauthorizedUntil: Date.now() + 3_600_000 } },
    });
    const t = running;
    const ids = Array.from({ length: 8 }, () => randomUUID());
    for (const id of ids) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    const readyz = async (): Promise<{ status: number; body: { reason?: string } }> => {
      const response = await fetch(`${t.daemon.opsUrl()!}/readyz`);
      return { status: response.status, body: (await response.json()) as { reason?: string } };
    };
    const red = await waitFor(
      async () => {
        const r = await readyz();
        return r.status === 503 ? r : null;
      },
      { what: '/readyz 503' },
    );
    expect(red.body.reason).toMatch(/401/);
    const unauthorized = t.sandbox.requests().filter((r) => r.status === 401).length;
    // Only the requests already in flight when the gate closed hit the 401 (concurrency 4), not one per item.
    expect(unauthorized).toBeLessThanOrEqual(4);
    await withCtx(t, async (ctx) => {
      // The trip sets the failure (what /readyz reads) first, then pauses each queue.
      await waitFor(() => ctx.queues.items.label.isPaused(), { what: 'the label queue paused' });
      expect(await listDeadLetters(ctx)).toEqual([]);
    });
    expect(await archivedCount(t)).toBe(0);

    // The key is fixed at the API; the operator runs `carrier-sync resume`.
    t.sandbox.setFaults({ unauthorizedUntil: null });
    await withCtx(t, (ctx) => ctx.authGate.clear());
    await waitFor(async () => (await archivedCount(t)) === ids.length, { what: 'all labels sent after resume' });
    expect((await readyz()).status).toBe(200);
    expect(t.sandbox.requests().filter((r) => r.status === 200 && r.endpoint === 'label')).toHaveLength(ids.length);
  });

  it('probes a refused key with real work only: one item at a time, no attempt spent, resumed on the first answer that is not a 401', async () => {
    // The scheduler opens a probe 200 ms after the 401, then backs off (400, 800, … ms). With
    // maxAttempts 2, an item that spent an attempt on each refused probe would be dead-lettered.
    running = await startTestDaemon({
      roles: ['watcher', 'worker', 'scheduler'],
      sandbox: { autoCreateDeliveries: true },
      settings: { delivery: { maxAttempts: 2, authProbeMs: 200 } },
    });
    const t = running;
    const windowEnds = Date.now() + 3000;
    t.sandbox.setFaults({ unauthorizedUntil: windowEnds });
    const ids = Array.from({ length: 6 }, () => randomUUID());
    for (const id of ids) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await waitFor(async () => (await archivedCount(t)) === ids.length, { what: 'all labels sent once the key works again', timeoutMs: 30_000 });

    const requests = t.sandbox.requests();
    const refused = requests.filter((r) => r.status === 401);
    // Every request the sandbox saw is a real item: a whole label (a refused request is not parsed,
    // so its size tells), and every accepted one for a delivery we dropped; no made-up delivery.
    expect(requests.filter((r) => r.endpoint !== 'label' || r.bodyBytes < 1000)).toEqual([]);
    expect(requests.filter((r) => r.status === 200 && !(ids as string[]).includes(r.deliveryId ?? ''))).toEqual([]);
    expect(requests.filter((r) => r.status !== 200 && r.status !== 401)).toEqual([]);
    // Several probes were refused, each by one item alone: after the first wave (the requests in
    // flight when the gate closed, at most the concurrency), never two 401s at once.
    const firstWaveEnds = Math.min(...refused.map((r) => r.at + r.durationMs));
    const probes = refused.filter((r) => r.at > firstWaveEnds);
    expect(probes.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < probes.length; i += 1) expect(probes[i]!.at).toBeGreaterThanOrEqual(probes[i - 1]!.at + probes[i - 1]!.durationMs);
    expect(requests.filter((r) => r.status === 200)).toHaveLength(ids.length);
    await withCtx(t, async (ctx) => {
      expect(await listDeadLetters(ctx)).toEqual([]);
      expect(await ctx.authGate.failure()).toBeNull();
    });
  });

  it('with nothing waiting, opens the gate and lets the next item be the probe', async () => {
    running = await startTestDaemon({
      roles: ['watcher', 'worker', 'scheduler'],
      sandbox: { autoCreateDeliveries: true },
      settings: { delivery: { authProbeMs: 200 } },
    });
    const t = running;
    await withCtx(t, (ctx) => ctx.authGate.trip({ at: new Date().toISOString(), endpoint: 'label', message: 'Unauthorized' }));
    await withCtx(t, (ctx) => waitFor(() => ctx.authGate.isProbing(), { what: 'the probe opened with no item waiting' }));
    expect(t.sandbox.requests()).toEqual([]);
    const id = randomUUID();
    await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await waitFor(async () => (await archivedCount(t)) === 1, { what: 'the next item sent as the probe' });
    await withCtx(t, async (ctx) => expect(await ctx.authGate.failure()).toBeNull());
  });

  it('does not take a 5xx to the probe for a working key: the gate stays closed until an answer judges the key', async () => {
    running = await startTestDaemon({
      roles: ['watcher', 'worker', 'scheduler'],
      sandbox: { autoCreateDeliveries: true },
      settings: { delivery: { maxAttempts: 10, authProbeMs: 200 } },
    });
    const t = running;
    t.sandbox.setFaults({ unauthorizedUntil: Date.now() + 600_000 });
    const ids = Array.from({ length: 3 }, () => randomUUID());
    for (const id of ids) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await waitFor(() => t.sandbox.requests().some((r) => r.status === 401), { what: 'the first 401' });
    // A front that answers 503 before it looks at the key: the probes get 503s.
    t.sandbox.setFaults({ errorRate: 1 });
    await waitFor(() => t.sandbox.requests().filter((r) => r.status === 503).length >= 2, { what: 'two probes answered 503', timeoutMs: 20_000 });
    await withCtx(t, async (ctx) => expect(await ctx.authGate.failure()).not.toBeNull());
    // The key works again: the next probe's 200 resumes everything.
    t.sandbox.setFaults({ errorRate: 0, unauthorizedUntil: null });
    await waitFor(async () => (await archivedCount(t)) === ids.length, { what: 'all labels sent once a probe got an answer', timeoutMs: 30_000 });
    await withCtx(t, async (ctx) => expect(await ctx.authGate.failure()).toBeNull());
  });
});
