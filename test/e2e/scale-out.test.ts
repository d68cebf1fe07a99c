/**
 * Scale-out: one watcher process and three worker processes on one Redis, as separate binaries.
 * Every item is sent once, and the rate limit is held across the three workers together.
 */
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

let env: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await env?.close();
  env = undefined;
});

async function startRoles(e: E2eEnv, roles: string, extra: Record<string, string> = {}): Promise<DaemonProcess> {
  const daemon = spawnDaemon({ ...e.env, ...extra }, { args: e.args('start', '--roles', roles) });
  await waitUntilStarted(daemon);
  return daemon;
}

describe('one watcher and three workers', () => {
  it('send every file once between them', async () => {
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
    const e = env;
    await startRoles(e, 'watcher');
    const workers = await Promise.all([1, 2, 3].map(() => startRoles(e, 'worker')));
    const ids = Array.from({ length: 90 }, () => randomUUID());
    for (const id of ids) await dropFile(join(e.spool, 'labels'), `${id}.pdf`, await makePdf(id));
    await waitFor(
      async () => (await readdir(join(e.spool, 'archive', 'labels'), { recursive: true })).filter((f) => String(f).endsWith('.pdf')).length === ids.length,
      {
        timeoutMs: 60_000,
        what: 'all labels archived',
      },
    );
    const accepted = e.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200);
    expect(accepted).toHaveLength(ids.length);
    expect(new Set(accepted.map((r) => r.deliveryId)).size).toBe(ids.length);
    // The work was shared: every worker process logged sends.
    for (const worker of workers) expect(worker.logs().filter((l) => l.msg === 'item sent').length).toBeGreaterThan(0);
  });

  it('hold one shared rate limit: three workers together never pass it', async () => {
    const limit = 24;
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, ratePerMinute: limit } });
    const e = env;
    await startRoles(e, 'watcher');
    const rate = { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(limit) };
    await Promise.all([1, 2, 3].map(() => startRoles(e, 'worker', rate)));
    const ids = Array.from({ length: limit + 12 }, () => randomUUID());
    for (const id of ids) await dropFile(join(e.spool, 'labels'), `${id}.pdf`, await makePdf(id));
    const sent = () => e.sandbox.requests().filter((r) => r.endpoint === 'label');
    await waitFor(() => sent().length >= limit, { timeoutMs: 30_000, what: `the first ${limit} sends` });
    const firstAt = sent()[0]!.at;
    // For the rest of the first minute nothing more may go out (bounded negative check: 5 s).
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      expect(sent().length).toBe(limit);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(sent().filter((r) => r.status === 429)).toEqual([]);
    expect(Date.now() - firstAt).toBeLessThan(60_000);
  });
});
