/**
 * "The newest document wins": per delivery and kind, a label or CT-e with a later mtime (then a
 * later claim) is newer, and once it was queued no older one is ever sent — whether the newer one
 * is waiting, being retried, sent or dead-lettered. Real Redis, the sandbox over real HTTP.
 */
import { createHash, randomUUID } from 'node:crypto';
import { rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { openContext } from '../../src/runtime/context.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { promoteDelayed, startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { listFiles } from '../support/e2e-env.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const sha = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

/** Writes `name` in the inbox as a producer does (temp name, then rename), with the given mtime. */
async function drop(inbox: string, name: string, bytes: Buffer | string, mtimeMs?: number): Promise<void> {
  const temp = join(inbox, `.${name}.part`);
  await writeFile(temp, bytes);
  if (mtimeMs !== undefined) await utimes(temp, mtimeMs / 1000, mtimeMs / 1000);
  await rename(temp, join(inbox, name));
}

/** Runs the retries of `kind` waiting in delayed now (as their backoff would, later); returns how many. */
async function promoteRetries(t: TestDaemon, kind: 'label' | 'cte'): Promise<number> {
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-promote');
  try {
    return await promoteDelayed(ctx.queues.items[kind]);
  } finally {
    await ctx.closers.closeAll();
  }
}

describe('document order: the newest document wins', () => {
  it('never sends an older label after the newer one finished, even when the older one was retrying', async () => {
    // The reported case: REV-1's first attempt is answered 503; REV-2 is sent and accepted; REV-1's
    // retry must then end superseded instead of overwriting REV-2.
    // The retry waits 30 s unless brought forward (promoteRetries), so it comes after REV-2 is queued whatever the load.
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { delivery: { backoffMs: 30_000 } } });
    const t = running;
    const id = randomUUID();
    const rev1 = await makePdf('REV-1');
    const rev2 = await makePdf('REV-2');
    t.sandbox.setFaults({ errorRate: 1 });
    await drop(join(t.spool, 'labels'), `${id}__REV-1.pdf`, rev1);
    await waitFor(() => t.sandbox.requests().some((r) => r.endpoint === 'label' && r.status === 503), { what: "REV-1's first attempt answered 503" });
    t.sandbox.setFaults({ errorRate: 0 });
    await drop(join(t.spool, 'labels'), `${id}__REV-2.pdf`, rev2);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1, { what: 'REV-2 archived', timeoutMs: 20_000 });
    await waitFor(async () => (await promoteRetries(t, 'label')) > 0, { what: "REV-1's retry brought forward" });
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 2, { what: 'both files archived', timeoutMs: 20_000 });

    expect(t.sandbox.state.deliveries.get(id)?.label?.sha256).toBe(sha(rev2));
    const accepted = t.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200);
    expect(accepted).toHaveLength(1);
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
    try {
      expect((await ctx.stats.read()).superseded.label).toBe(1);
    } finally {
      await ctx.closers.closeAll();
    }
  });

  it('never sends an older CT-e whose newer version was dead-lettered', async () => {
    // The newer CT-e names a delivery the sandbox does not know, so it is dead-lettered: the older
    // one must still not be sent (dead-lettered is a state of the newer document, not a way back).
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: false }, settings: { delivery: { backoffMs: 30_000, notFoundAttempts: 1 } } });
    const t = running;
    const id = randomUUID();
    t.sandbox.setFaults({ errorRate: 1 });
    await drop(join(t.spool, 'cte'), `${id}.xml`, makeCteXml({ nCT: '1' }), Date.now() - 10_000);
    await waitFor(() => t.sandbox.requests().some((r) => r.endpoint === 'cte' && r.status === 503), { what: "the older CT-e's first attempt answered 503" });
    t.sandbox.setFaults({ errorRate: 0 });
    await drop(join(t.spool, 'cte'), `${id}.xml`, makeCteXml({ nCT: '2' }));
    await waitFor(async () => (await listFiles(join(t.spool, 'failed'))).length === 2, {
      what: 'the newer CT-e in failed/ with its report',
      timeoutMs: 20_000,
    });
    await waitFor(async () => (await promoteRetries(t, 'cte')) > 0, { what: "the older CT-e's retry brought forward" });
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1 && (await listFiles(join(t.spool, 'failed'))).length === 2, {
      what: 'older archived (superseded), newer in failed/ with its report',
      timeoutMs: 20_000,
    });
    const cteRequests = t.sandbox.requests().filter((r) => r.endpoint === 'cte');
    // The older one's first attempt (503) and the newer one's refusal (unknown delivery): the older
    // one never again.
    expect(cteRequests).toHaveLength(2);
    expect(cteRequests.filter((r) => r.status === 200)).toEqual([]);
    expect(cteRequests.filter((r) => r.status === 503)).toHaveLength(1);
  });

  it('treats a file with an older mtime, dropped after a newer one was queued, as superseded', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const newer = await makePdf('newer');
    await drop(join(t.spool, 'labels'), `${id}__B.pdf`, newer);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1, { what: 'the newer label archived' });
    // A copy that kept its old mtime (cp -p, rsync -t) is older by the rule, however late it comes.
    await drop(join(t.spool, 'labels'), `${id}__A.pdf`, await makePdf('older'), Date.now() - 3_600_000);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 2, { what: 'the older label archived without a send' });
    expect(t.sandbox.requests().filter((r) => r.endpoint === 'label')).toHaveLength(1);
    expect(t.sandbox.state.deliveries.get(id)?.label?.sha256).toBe(sha(newer));
  });

  it('sends an older version again when it is dropped anew after a newer one (it is the newest now)', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const a = await makePdf('A');
    const b = await makePdf('B');
    await drop(join(t.spool, 'labels'), `${id}.pdf`, a);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1);
    await drop(join(t.spool, 'labels'), `${id}.pdf`, b);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 2);
    // The same bytes as A, dropped now: the API holds B, so "already sent" must not swallow it.
    await drop(join(t.spool, 'labels'), `${id}.pdf`, a);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 3, { what: 'the re-dropped A archived' });
    expect(t.sandbox.state.deliveries.get(id)?.label?.sha256).toBe(sha(a));
    expect(t.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200)).toHaveLength(3);
  });
});
