/**
 * The daemon on a Redis Cluster (three masters started from Debian's redis-server): with a
 * hash-tagged prefix every queue, Lua script and key of the deployment lives in one slot.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { findByFile, findBySha256, readJourney } from '../../src/journey/journey-read.js';
import { compactJourneys } from '../../src/journey/journey-compact.js';
import { deadLetterDeliveries } from '../../src/queue/dead-letter.js';
import { DAY_MS } from '../../src/journey/journey.js';
import { createHash } from 'node:crypto';
import { openContext } from '../../src/runtime/context.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { freePorts } from '../support/redis-process.js';
import { waitFor } from '../support/wait.js';

const run = promisify(execFile);
const nodes: ChildProcess[] = [];
let dir = '';
let seeds = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cs-cluster-'));
  // Each node's bus port chosen free too: the default, the port + 10,000, is never checked.
  const free = await freePorts(6);
  const ports = free.slice(0, 3);
  for (const [i, port] of ports.entries()) {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(free[3 + i]),
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    nodes.push(child);
  }
  const addresses = ports.map((port) => `127.0.0.1:${port}`);
  await waitFor(async () => (await run('redis-cli', ['-p', String(ports[2]), 'ping'])).stdout.includes('PONG'), { what: 'cluster nodes up' });
  await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);
  await waitFor(async () => (await run('redis-cli', ['-p', String(ports[0]), 'cluster', 'info'])).stdout.includes('cluster_state:ok'), {
    what: 'cluster_state:ok',
  });
  seeds = addresses.map((address) => `redis://${address}`).join(',');
}, 60_000);

afterAll(async () => {
  for (const child of nodes) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

let running: TestDaemon | undefined;
afterAll(async () => {
  await running?.stop();
});

describe('Redis Cluster', () => {
  it('refuses a prefix without a hash tag on a cluster', () => {
    expect(() =>
      loadConfig({ env: { REDIS_URL: 'redis://127.0.0.1:7000', CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_PREFIX: 'carrier-sync' } }),
    ).toThrowError(/hash tag/);
  });

  it('sends labels and events once through a three-node cluster', async () => {
    const prefix = `{cs-${randomUUID().slice(0, 8)}}`;
    running = await startTestDaemon({
      sandbox: { autoCreateDeliveries: true },
      env: { REDIS_URL: seeds, CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_PREFIX: prefix },
    });
    const t = running;
    const ids = Array.from({ length: 10 }, () => randomUUID());
    const shas = new Map<string, string>();
    for (const id of ids) {
      const pdf = await makePdf(id);
      shas.set(id, createHash('sha256').update(pdf).digest('hex'));
      await writeFile(join(t.spool, 'labels', `${id}.pdf`), pdf);
    }
    await writeFile(join(t.spool, 'events', 'e.ndjson'), ids.map((id) => JSON.stringify({ delivery_id: id, event_at: '2026-05-01T10:00:00Z' })).join('\n'));
    await waitFor(
      async () => (await readdir(join(t.spool, 'archive'), { recursive: true })).filter((f) => /\.(pdf|ndjson)$/.test(String(f))).length === ids.length + 1,
      { what: 'all archived' },
    );
    const ok = t.sandbox.requests().filter((r) => r.status === 200);
    expect(ok.filter((r) => r.endpoint === 'label')).toHaveLength(ids.length);
    expect(ok.filter((r) => r.endpoint === 'collecting')).toHaveLength(ids.length);

    // The journeys: written by the gate's scripts, the claim's pipelines and the holder's moves, all
    // in the deployment's slot; read back by delivery and by an events file's name.
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
    try {
      const window = { retentionDays: 30, nowMs: Date.now() };
      await waitFor(async () => (await readJourney(ctx.redis, ctx.keys, ids[0]!, window)).some((s) => s.step === 'archived'), { what: 'the archived step' });
      const steps = await readJourney(ctx.redis, ctx.keys, ids[0]!, window);
      expect(steps.filter((s) => s.kind === 'label').map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'accepted', 'archived']);
      expect(steps.filter((s) => s.kind === 'collecting').map((s) => s.step)).toEqual(['received', 'attempt', 'accepted']);
      const fromFile = await findByFile(ctx.redis, ctx.keys, ['e.ndjson'], 30, Date.now());
      expect(new Set(fromFile.map((s) => s.delivery_id))).toEqual(new Set(ids));

      // Folded as the hourly job folds them two days later: one script call a delivery, its keys in the slot.
      const folded = await compactJourneys(ctx.redis, ctx.keys, {
        retentionDays: 30,
        detailDays: 1,
        nowMs: Date.now() + 2 * DAY_MS,
        deadLetterDeliveries: () => deadLetterDeliveries(ctx.queues),
      });
      expect(folded).toMatchObject({ folded: ids.length, left: 0 });
      const after = await readJourney(ctx.redis, ctx.keys, ids[0]!, window);
      expect(after.filter((s) => s.kind === 'label').map((s) => s.step)).toEqual(['seen', 'accepted', 'archived', 'folded']);
      expect(after.filter((s) => s.kind === 'collecting').map((s) => s.step)).toEqual(['received', 'accepted', 'folded']);
      const bySha = await findBySha256(ctx.redis, ctx.keys, shas.get(ids[3]!)!.slice(0, 6), 30, Date.now());
      expect(new Set(bySha.map((s) => s.delivery_id))).toEqual(new Set([ids[3]]));
      expect(new Set((await findByFile(ctx.redis, ctx.keys, ['e.ndjson'], 30, Date.now())).map((s) => s.delivery_id))).toEqual(new Set(ids));
    } finally {
      await ctx.closers.closeAll();
    }
  });
});
