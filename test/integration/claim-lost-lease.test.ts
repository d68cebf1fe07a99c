/**
 * A claim whose enqueue fails puts its file back into the inbox, to be claimed again — but not once
 * its process lost the spool's lease meanwhile. The holder after it has read `.inflight/` and may be
 * resuming that very file; moved back under it, the file was claimed a second time under a new
 * name that waited for an outcome already applied (a loaded Sentinel failover sweep, seed 18, left
 * a label in `.inflight/` so). Real Redis of the test's own, made to refuse writes (maxmemory) so
 * the enqueue fails the way a full or failing Redis makes it fail; real files; real checks. The
 * holder adopts such a file at its next periodic pass (inflight-index.ts, adoptUntracked).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log.js';
import { openContext, type Context } from '../../src/runtime/context.js';
import { claimFile, type ClaimDeps } from '../../src/spool/claim.js';
import { loadInflightIndex } from '../../src/spool/inflight-index.js';
import { spoolPaths } from '../../src/spool/paths.js';
import { createCheckPool, type CheckPool } from '../../src/validate/pool/check-pool.js';
import { makePdf } from '../support/builders.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';

let own: OwnRedis;
let admin: Redis;
let ctx: Context;
let checks: CheckPool;
let root: string;

beforeAll(async () => {
  own = await startOwnRedis();
  admin = new Redis(own.url);
  root = await mkdtemp(join(tmpdir(), 'cs-claim-lease-'));
  const config = loadConfig({ env: { REDIS_URL: own.url, CARRIER_SYNC_SPOOL_DIR: root } });
  ctx = await openContext(config, silentLogger, 'claim-lost-lease');
  checks = createCheckPool(config.checks, silentLogger);
});
afterAll(async () => {
  await checks?.close();
  await ctx?.closers.closeAll();
  admin?.disconnect();
  await own?.close();
  await rm(root, { recursive: true, force: true });
});

/** Deps whose lease holds for the first `heldCalls` asks, then is lost. */
function depsHeldFor(heldCalls: number, tracked: Set<string>): ClaimDeps {
  let asks = 0;
  const notHere = (): never => {
    throw new Error('not expected here');
  };
  return {
    paths: spoolPaths(root, 'spool-under-test'),
    spool: ctx.config.spool,
    enqueue: ctx.enqueueDeps,
    batches: ctx.batches,
    sink: { reject: notHere, archive: notHere, finishBatch: notHere },
    track: (kind, name) => tracked.add(`${kind}/${name}`),
    untrack: (kind, name) => tracked.delete(`${kind}/${name}`),
    isOwner: () => ++asks <= heldCalls,
    checks,
    clock: ctx.clock,
    logger: silentLogger,
  };
}

/** A stable label in the inbox, as the watcher last saw it. */
async function dropLabel(): Promise<{ fileName: string; seen: { size: number; mtimeMs: number } }> {
  const fileName = `${randomUUID()}.pdf`;
  await mkdir(join(root, 'labels'), { recursive: true });
  await mkdir(join(root, '.inflight', 'labels'), { recursive: true });
  await writeFile(join(root, 'labels', fileName), await makePdf(fileName));
  const { size, mtimeMs } = await stat(join(root, 'labels', fileName));
  return { fileName, seen: { size, mtimeMs } };
}

const inflight = async (): Promise<string[]> => readdir(join(root, '.inflight', 'labels')).catch(() => []);

it('a claim whose enqueue fails puts the file back while it holds the lease, and leaves it in .inflight/ once it lost the lease', async () => {
  await admin.config('SET', 'maxmemory', '1');
  try {
    // Holding the lease throughout: back into the inbox, untracked.
    const held = await dropLabel();
    const heldTracked = new Set<string>();
    await expect(claimFile(depsHeldFor(Infinity, heldTracked), 'labels', held.fileName, held.seen)).rejects.toThrow(/OOM|maxmemory/);
    expect(await readdir(join(root, 'labels'))).toContain(held.fileName);
    expect(await inflight()).toEqual([]);
    expect(heldTracked.size).toBe(0);

    // The lease lost between the move into .inflight/ (the second ask) and the failed enqueue: the file stays for the next holder.
    const lost = await dropLabel();
    const lostTracked = new Set<string>();
    await expect(claimFile(depsHeldFor(2, lostTracked), 'labels', lost.fileName, lost.seen)).rejects.toThrow(/OOM|maxmemory/);
    expect(await readdir(join(root, 'labels'))).not.toContain(lost.fileName);
    expect((await inflight()).filter((name) => name.endsWith(`~${lost.fileName}`))).toHaveLength(1);
    expect(lostTracked.size).toBe(0);
  } finally {
    await admin.config('SET', 'maxmemory', '0');
  }
});

it('the holder adopts what another process moved into .inflight/ after it read the folder, for its periodic reconcile', async () => {
  const paths = spoolPaths(root, 'spool-under-test');
  const index = await loadInflightIndex(paths);
  const before = index.all('labels').length;
  // Moved in by a process that lost the lease (the case above), after this index was loaded.
  const late = await dropLabel();
  const tracked = new Set<string>();
  await admin.config('SET', 'maxmemory', '1');
  await expect(claimFile(depsHeldFor(2, tracked), 'labels', late.fileName, late.seen)).rejects.toThrow(/OOM|maxmemory/);
  await admin.config('SET', 'maxmemory', '0');
  expect(index.all('labels')).toHaveLength(before);
  const adoptedAt = Date.now();
  expect(await index.adoptUntracked()).toBe(1);
  const [name] = index.all('labels').filter((each) => each.endsWith(`~${late.fileName}`));
  expect(index.trackedAt('labels', name!)).toBeGreaterThanOrEqual(adoptedAt);
  // Tracked from now: a periodic pass (claims a minute old) leaves it alone until it is as old as the others.
  expect(index.olderThan('labels', adoptedAt)).not.toContain(name);
  expect(await index.adoptUntracked()).toBe(0);
});
