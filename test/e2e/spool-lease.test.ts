/**
 * Three full daemons (every role) on one spool, as separate binaries: one holds the spool's lease
 * and alone moves files; `status` and `/readyz` name it. After its `kill -9`, a standby takes over
 * within 10 s (measured with the default lease), and what was in flight ends once, nowhere twice.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from '../support/process.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

let env: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await env?.close();
  env = undefined;
});

const HOLDING = 'holding the spool lease: this process watches the spool and moves its files';
const isMove = (line: LogLine): boolean => line.msg === 'file archived' || line.msg === 'file refused';

/** Files under `dir`, date folders of archive/ left out. */
async function filesIn(dir: string): Promise<string[]> {
  return (await listFiles(dir)).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, '')).sort();
}

async function readyz(daemon: DaemonProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const started = daemon.logs().find((line) => line.msg === 'carrier-sync started');
  const response = await fetch(`${String(started?.['opsUrl'])}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('three daemons on one spool', () => {
  it('one holds the spool and moves each file once; after its kill -9 a standby takes over within 10 s and nothing is lost or moved twice', async () => {
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 100, latencyJitterMs: 100 } } });
    const e = env;
    const daemons = await Promise.all(
      [1, 2, 3].map(async () => {
        const daemon = spawnDaemon(e.env, { args: e.args('start') });
        // Three at once on a busy machine: allow more than the usual 20 s.
        await waitUntilStarted(daemon, 60_000);
        return daemon;
      }),
    );
    const holders = daemons.filter((d) => d.logs().some((line) => line.msg === HOLDING));
    expect(holders, daemons.map((d) => d.tail(5)).join('\n---\n')).toHaveLength(1);
    const holder = holders[0]!;
    const standbys = daemons.filter((d) => d !== holder);
    for (const standby of standbys)
      expect(standby.logs().map((line) => line.msg)).toContain('standing by: another process holds the spool lease (it watches the spool and moves its files)');

    // Who holds the spool: /readyz of each (a standby is ready too) and `status`.
    for (const daemon of daemons) {
      const { status, body } = await readyz(daemon);
      expect(status).toBe(200);
      expect(body['spool']).toMatchObject({
        role: daemon === holder ? 'holder' : 'standby',
        self: { pid: daemon.child.pid },
        holder: { pid: holder.child.pid, isSelf: daemon === holder },
      });
    }
    const status = await runCli(e.args('status', '--json'), { env: e.env });
    expect(status.code, status.stderr).toBe(0);
    const spools = (JSON.parse(status.stdout) as { spools: Array<{ id: string; holder: { pid: number } | null }> }).spools;
    expect(spools).toHaveLength(1);
    expect(spools[0]!.holder?.pid).toBe(holder.child.pid);
    const text = await runCli(e.args('status'), { env: e.env });
    expect(text.stdout).toContain(`spool ${spools[0]!.id}: held by pid ${holder.child.pid} on `);

    // Invalid CT-e (refused at the claim) and labels (sent, then archived): each once, by the holder.
    const badCtes = Array.from({ length: 10 }, () => `${randomUUID()}.xml`);
    const labels = Array.from({ length: 10 }, () => `${randomUUID()}.pdf`);
    for (const name of badCtes) await dropFile(join(e.spool, 'cte'), name, '<CTe><not-closed>');
    for (const name of labels) await dropFile(join(e.spool, 'labels'), name, await makePdf(name));
    const expectedFailed = badCtes.flatMap((name) => [name, `${name}.error.json`]).sort();
    await waitFor(
      async () =>
        (await filesIn(join(e.spool, 'failed', 'cte'))).length >= expectedFailed.length &&
        (await filesIn(join(e.spool, 'archive', 'labels'))).length >= labels.length &&
        // A move's log line follows its rename (and crosses the pipe after it).
        holder.logs().filter(isMove).length >= badCtes.length + labels.length,
      {
        what: 'every file decided, and its move logged',
        timeoutMs: 30_000,
      },
    );
    expect(await filesIn(join(e.spool, 'failed', 'cte'))).toEqual(expectedFailed);
    expect(await filesIn(join(e.spool, 'archive', 'labels'))).toEqual([...labels].sort());
    for (const standby of standbys) expect(standby.logs().filter(isMove)).toEqual([]);
    expect(holder.logs().filter(isMove)).toHaveLength(badCtes.length + labels.length);

    // kill -9 of the holder while labels are in flight, and a file dropped right after it.
    const inFlight = Array.from({ length: 20 }, () => `${randomUUID()}.pdf`);
    for (const name of inFlight) await dropFile(join(e.spool, 'labels'), name, await makePdf(name));
    await waitFor(async () => (await listFiles(join(e.spool, '.inflight', 'labels'))).length > 0, { what: 'labels in flight', intervalMs: 5 });
    const killedAt = Date.now();
    holder.kill('SIGKILL');
    expect((await holder.exited).signal).toBe('SIGKILL');
    const inflightAtKill = (await listFiles(join(e.spool, '.inflight'))).length;
    const afterKill = `${randomUUID()}.pdf`;
    await dropFile(join(e.spool, 'labels'), afterKill, await makePdf(afterKill));

    const next = await Promise.race(
      standbys.map((d) =>
        d.waitForLog((line) => line.msg === HOLDING, { timeoutMs: 20_000, what: 'a standby taking over' }).then((line) => ({ daemon: d, line })),
      ),
    );
    const takeoverMs = (next.line.time ?? Number.NaN) - killedAt;
    await waitFor(async () => (await filesIn(join(e.spool, 'archive', 'labels'))).includes(afterKill), {
      what: 'the file dropped after the kill archived',
      timeoutMs: 20_000,
      intervalMs: 10,
    });
    const processedMs = Date.now() - killedAt;
    console.info(
      `[spool lease] kill -9 of the holder → a standby holds the lease after ${takeoverMs} ms; a file dropped after the kill archived after ${processedMs} ms (files in flight at the kill: ${inflightAtKill})`,
    );
    expect(takeoverMs).toBeLessThan(10_000);
    expect(processedMs).toBeLessThan(10_000);

    // Everything in flight at the kill ends once; the third process still stands by.
    const allLabels = [...labels, ...inFlight, afterKill].sort();
    await waitFor(
      async () => (await filesIn(join(e.spool, 'archive', 'labels'))).length >= allLabels.length && (await listFiles(join(e.spool, '.inflight'))).length === 0,
      {
        what: 'every label archived after the takeover',
        timeoutMs: 30_000,
      },
    );
    expect(await filesIn(join(e.spool, 'archive', 'labels'))).toEqual(allLabels);
    expect(await filesIn(join(e.spool, 'failed'))).toEqual(expectedFailed.map((name) => `cte/${name}`));
    for (const inbox of ['labels', 'cte', 'events']) expect(await listFiles(join(e.spool, inbox))).toEqual([]);
    const third = standbys.find((d) => d !== next.daemon)!;
    expect(third.logs().filter((line) => line.msg === HOLDING || isMove(line))).toEqual([]);
    const after = JSON.parse((await runCli(e.args('status', '--json'), { env: e.env })).stdout) as { spools: Array<{ holder: { pid: number } | null }> };
    expect(after.spools[0]!.holder?.pid).toBe(next.daemon.child.pid);
    expect((await readyz(third)).body['spool']).toMatchObject({ role: 'standby', holder: { pid: next.daemon.child.pid } });
  });

  it('a clean stop of the holder gives the lease up: a standby takes over at once', async () => {
    env = await createE2eEnv();
    const e = env;
    const first = spawnDaemon(e.env, { args: e.args('start', '--roles', 'watcher') });
    await waitUntilStarted(first);
    const second = spawnDaemon(e.env, { args: e.args('start', '--roles', 'watcher') });
    await waitUntilStarted(second);
    expect(second.logs().map((line) => line.msg)).toContain('standing by: another process holds the spool lease (it watches the spool and moves its files)');
    first.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    const exitedAt = Date.now();
    expect(first.logs().map((line) => line.msg)).toContain('gave the spool lease up: a standby takes over');
    const taken = await second.waitForLog((line) => line.msg === HOLDING, { timeoutMs: 10_000, what: 'the standby taking over' });
    // Not left to expire: renewed every 5/3 s, an unreleased lease would live on at least 3.3 s past
    // the exit; a standby tries every second.
    expect((taken.time ?? Number.NaN) - exitedAt).toBeLessThan(3000);
  });

  it('a holder whose lease is taken from it stops claiming files until it holds the lease again', async () => {
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
    const e = env;
    const daemon = spawnDaemon(e.env, { args: e.args('start', '--roles', 'watcher,worker') });
    await waitUntilStarted(daemon);
    const spoolId = (await readFile(join(e.spool, '.spool-id'), 'utf8')).trim();
    const key = `${e.prefix}:spool-lease:${spoolId}`;
    const redis = new Redis(testRedisUrl());
    try {
      expect(JSON.parse((await redis.get(key)) ?? '{}')).toMatchObject({ pid: daemon.child.pid });
      // Another process's lease, as if this one had been cut off from Redis long enough to lose it.
      await redis.set(key, JSON.stringify({ id: 'someone-else', host: 'elsewhere', pid: 1, since: new Date().toISOString() }), 'PX', 60_000);
      const lost = await daemon.waitForLog((line) => line.msg === 'lost the spool lease: stopped moving files; standing by', {
        timeoutMs: 5000,
        what: 'the loss noticed',
      });
      expect(lost['reason']).toBe('the lease expired or another process took it');
      const name = `${randomUUID()}.pdf`;
      await dropFile(join(e.spool, 'labels'), name, await makePdf(name));
      // Bounded negative check: a holder claims a file within a few hundred ms (writeStableMs 100).
      const until = Date.now() + 2000;
      while (Date.now() < until) {
        expect(await listFiles(join(e.spool, 'labels'))).toEqual([name]);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(daemon.logs().filter((line) => line.msg === 'file queued')).toEqual([]);
      await redis.del(key);
      await waitFor(async () => (await filesIn(join(e.spool, 'archive', 'labels'))).includes(name), {
        what: 'the file archived once the lease is back',
        timeoutMs: 15_000,
      });
      expect(daemon.logs().filter((line) => line.msg === HOLDING)).toHaveLength(2);
    } finally {
      redis.disconnect();
    }
  });
});
