/**
 * One spool, one deployment: two deployments pointed at one spool by mistake, each with its own
 * Redis server (and one prefix, so only the deployment id tells them apart), each sending with its
 * own carrier key. Deployment A holds the spool; B refuses to watch it with one line naming both,
 * `/readyz` 503 and `status` say so. After a `kill -9` of A with labels in flight B still keeps off
 * the spool (A's holder file is live); A restarted takes it back and every label ends once, none
 * sent by B. A's clean stop removes its holder file, and B takes the spool.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from '../support/process.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

let env: E2eEnv | undefined;
let otherRedis: OwnRedis | undefined;
afterEach(async () => {
  await killAllDaemons();
  await env?.close();
  await otherRedis?.close();
  env = undefined;
  otherRedis = undefined;
});

const HOLDING = 'holding the spool lease: this process watches the spool and moves its files';
const SECRET = 's3cret-of-b';
const isRefusal = (line: LogLine): boolean => typeof line.msg === 'string' && line.msg.startsWith('refusing to watch the spool');
const isMove = (line: LogLine): boolean => line.msg === 'file archived' || line.msg === 'file refused' || line.msg === 'file queued';

async function readyz(daemon: DaemonProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const started = daemon.logs().find((line) => line.msg === 'carrier-sync started');
  const response = await fetch(`${String(started?.['opsUrl'])}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function archivedLabels(spool: string): Promise<string[]> {
  return (await listFiles(join(spool, 'archive', 'labels'))).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, '')).sort();
}

describe('two deployments on one spool', () => {
  it('the second refuses a live holder’s spool, also after the holder’s kill -9; no label is sent by it or sent twice', async () => {
    env = await createE2eEnv({
      sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 100, latencyJitterMs: 100 } },
      // A short lease; a holder file live long enough for A to restart after its kill -9.
      settings: { spool: { leaseMs: 1500, holderFileMs: 30_000 } },
    });
    otherRedis = await startOwnRedis();
    const e = env;
    const [carrierA, carrierB] = Object.keys(e.sandbox.keys.carriers) as [string, string];
    const redisA = testRedisUrl().replace(/\/$/, '');
    const portB = new URL(otherRedis.url).port;
    const envA = e.env;
    // B's Redis URL carries a password: it must appear nowhere (log, holder file, status).
    const envB = { ...e.env, REDIS_URL: `redis://:${SECRET}@127.0.0.1:${portB}`, CARRIER_SYNC_CARRIER_KEY: e.sandbox.keys.carriers[carrierB]! };
    const nameA = `prefix "${e.prefix}" on ${redisA}`;
    const nameB = `prefix "${e.prefix}" on redis://127.0.0.1:${portB}`;

    const a = spawnDaemon(envA, { args: e.args('start') });
    await waitUntilStarted(a);
    expect(a.logs().map((line) => line.msg)).toContain(HOLDING);
    const b = spawnDaemon(envB, { args: e.args('start') });
    await waitUntilStarted(b);
    const refusal = await b.waitForLog(isRefusal, { timeoutMs: 5000, what: 'the refusal' });
    expect(refusal.msg).toContain(`another deployment holds it (${nameA}; pid ${a.child.pid} on `);
    expect(refusal.msg).toContain(`this process belongs to ${nameB}`);
    expect(refusal.level).toBe(50);

    const holderFile = await readFile(join(e.spool, '.holder.json'), 'utf8');
    expect(JSON.parse(holderFile)).toMatchObject({ prefix: e.prefix, redis: redisA, pid: a.child.pid });
    expect((await readyz(a)).status).toBe(200);
    const unready = await readyz(b);
    expect(unready.status).toBe(503);
    expect(unready.body['reason']).toBe(`spool held by another deployment (${nameA})`);
    expect(unready.body['spool']).toMatchObject({ foreignHolder: { pid: a.child.pid, prefix: e.prefix, redis: redisA } });

    const statusB = await runCli(e.args('status', '--json'), { env: envB });
    expect(statusB.code, statusB.stderr).toBe(0);
    expect(JSON.parse(statusB.stdout)).toMatchObject({
      spoolHolderFile: { isLive: true, isOtherDeployment: true, holder: { pid: a.child.pid, redis: redisA } },
    });
    const textB = await runCli(e.args('status'), { env: envB });
    expect(textB.stdout).toContain(`held by another deployment (${nameA}; pid ${a.child.pid} on `);
    expect(textB.stdout).toContain(`this deployment (${nameB}) does not watch it`);
    const statusA = JSON.parse((await runCli(e.args('status', '--json'), { env: envA })).stdout) as { spoolHolderFile: { isOtherDeployment: boolean } };
    expect(statusA.spoolHolderFile.isOtherDeployment).toBe(false);

    // 100 labels; kill -9 of A while some are in flight.
    const labels = Array.from({ length: 100 }, () => `${randomUUID()}.pdf`);
    for (const name of labels) await dropFile(join(e.spool, 'labels'), name, await makePdf(name));
    await waitFor(async () => (await listFiles(join(e.spool, '.inflight', 'labels'))).length >= 10, { what: 'labels in flight', intervalMs: 5 });
    const killedAt = Date.now();
    a.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    const inflightAtKill = (await listFiles(join(e.spool, '.inflight', 'labels'))).length;
    expect(inflightAtKill).toBeGreaterThan(0);

    // A's lease in its Redis expires after 1.5 s; its holder file lives on: B keeps off the spool.
    const restarted = spawnDaemon(envA, { args: e.args('start') });
    await restarted.waitForLog((line) => line.msg === HOLDING, { timeoutMs: 25_000, what: 'A restarted taking the spool back' });
    await waitFor(async () => (await archivedLabels(e.spool)).length >= labels.length && (await listFiles(join(e.spool, '.inflight'))).length === 0, {
      what: 'every label archived',
      timeoutMs: 60_000,
    });
    expect(await archivedLabels(e.spool)).toEqual([...labels].sort());
    expect(await listFiles(join(e.spool, 'labels'))).toEqual([]);
    expect(b.logs().filter((line) => line.msg === HOLDING || isMove(line))).toEqual([]);
    expect(b.logs().filter(isRefusal).length).toBeGreaterThanOrEqual(1);

    // The sandbox's request log: B sent nothing; each label was sent once, except one whose request
    // reached the API in the instant A was killed (A's own at-least-once, see the README).
    const sent = e.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200);
    expect(sent.filter((r) => r.keyId === carrierB)).toEqual([]);
    const byDelivery = new Map<string, number[]>();
    for (const r of sent) byDelivery.set(r.deliveryId ?? '?', [...(byDelivery.get(r.deliveryId ?? '?') ?? []), r.at]);
    expect([...byDelivery.keys()].sort()).toEqual(labels.map((name) => name.replace(/\.pdf$/, '')).sort());
    const twice = [...byDelivery.entries()].filter(([, at]) => at.length > 1);
    for (const [deliveryId, at] of twice) expect(Math.abs(Math.min(...at) - killedAt), `${deliveryId} sent twice: ${at.join(', ')}`).toBeLessThan(1000);
    expect(twice.length).toBeLessThanOrEqual(4);
    console.info(`[spool deployments] labels in flight at the kill: ${inflightAtKill}; sent twice by A (at the API when it was killed): ${twice.length}`);

    // A's clean stop removes its holder file: B takes the spool and sends with its own key.
    restarted.kill('SIGTERM');
    expect(await restarted.exited).toEqual({ code: 0, signal: null });
    await b.waitForLog((line) => line.msg === HOLDING, { timeoutMs: 10_000, what: 'B taking the spool' });
    expect(JSON.parse(await readFile(join(e.spool, '.holder.json'), 'utf8'))).toMatchObject({ redis: `redis://127.0.0.1:${portB}` });
    await waitFor(async () => (await readyz(b)).status === 200, { what: 'B ready', timeoutMs: 5000 });
    const afterHandover = `${randomUUID()}.pdf`;
    await dropFile(join(e.spool, 'labels'), afterHandover, await makePdf(afterHandover));
    await waitFor(async () => (await archivedLabels(e.spool)).includes(afterHandover), { what: 'B archiving a label', timeoutMs: 20_000 });
    expect(e.sandbox.requests().filter((r) => r.endpoint === 'label' && r.keyId === carrierB && r.status === 200)).toHaveLength(1);

    for (const text of [...b.stderrLines, ...b.stdoutLines, statusB.stdout, textB.stdout, await readFile(join(e.spool, '.holder.json'), 'utf8')]) {
      expect(text).not.toContain(SECRET);
    }
    expect(carrierA).not.toBe(carrierB);
  });
});
