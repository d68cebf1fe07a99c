/**
 * `/metrics` must be valid Prometheus exposition text that passes promtool's linter (names, units,
 * `_total` only on counters, HELP on everything). promtool comes from Debian's `prometheus`
 * package; CI installs it, and a machine without it fails here rather than skipping silently.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { DeliveryConfig } from '../../src/config/schema.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import { readRefusals } from '../../src/queue/activity.js';
import { createAuthGate } from '../../src/queue/auth-gate.js';
import { createDedupMemory } from '../../src/queue/dedup.js';
import { createKeys, ITEM_KINDS } from '../../src/queue/keys.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/queue/redis.js';
import { createStats } from '../../src/queue/stats.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const PROMTOOL = '/usr/bin/promtool';
const DELIVERY: DeliveryConfig = {
  ratePerMinute: 300,
  rateWindowMarginMs: 1000,
  maxAttempts: 3,
  backoffMs: 1000,
  notFoundAttempts: 2,
  maxQueued: 5000,
  concurrency: 1,
  maxRateLimitedMs: 60_000,
  completedRetentionSec: 3600,
  lockMs: 30_000,
  authProbeMs: 10_000,
};

const prefix = uniquePrefix('promtool');
const redis = connectRedis(testRedisUrl(), 'promtool-test');
const keys = createKeys(prefix);
let queues: QueueSet;
let server: OpsServer;

beforeAll(async () => {
  queues = openQueues(redis, prefix, DELIVERY);
  const stats = createStats(redis, keys.stats);
  const authGate = createAuthGate(redis, keys.authFailure, ITEM_KINDS.map((kind) => queues.items[kind]));
  const readiness = createReadiness({ redis, authGate, isDraining: () => false });
  const metrics = createMetrics();
  metrics.attach({
    stats,
    queues: queues.items,
    isAuthPaused: async () => (await authGate.failure()) !== null,
    refusalCounts: async () => (await readRefusals(redis, keys)).counts,
    isReady: async () => (await readiness()).isReady,
    ratePerMinute: DELIVERY.ratePerMinute,
    maxQueued: DELIVERY.maxQueued,
  });
  server = await startOpsServer({
    host: '127.0.0.1',
    port: 0,
    uiPassword: null,
    ingestToken: null,
    maxIngestBytes: 65_536,
    metrics,
    queues: queues.items,
    enqueueDeps: { redis, keys, queues, dedup: createDedupMemory(redis, keys, 30), stats, clock: systemClock },
    readiness,
    overview: { authGate, ratePerMinute: DELIVERY.ratePerMinute, maxQueued: DELIVERY.maxQueued, spoolId: null, inboxCounts: async () => ({}) },
    logger: silentLogger,
  });
  // Some activity, so every labelled series has samples: API requests of each outcome, queued
  // items of each kind, and the shared counters.
  for (const status of [200, 201, 400, 429, 503, 'network', 'timeout'] as const) {
    metrics.observeRequest({ endpoint: 'label', status, durationMs: 35 });
    metrics.observeRequest({ endpoint: 'collecting', status, durationMs: 1200 });
  }
  const ingest = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { delivery_id: 'PROM-1', event_at: '2026-01-01T00:00:00Z' },
      { delivery_id: 'PROM-1', event_at: '2025-12-31T21:00:00-03:00' },
      { delivery_id: 'PROM-2', event_at: '2099-01-01T00:00:00Z' },
    ]),
  });
  expect(ingest.status).toBe(202);
  await queues.items.label.add('label', { kind: 'label' } as never, { jobId: 'label.PROM-1.abc' });
  await queues.items.cte.add('cte', { kind: 'cte' } as never, { jobId: 'cte.PROM-1.def', delay: 60_000 });
  for (const kind of ITEM_KINDS) {
    await stats.add('sent', kind, 3);
    await stats.add('dead_lettered', kind);
    await stats.add('failed', kind, 2);
  }
});

afterAll(async () => {
  await server?.close();
  await queues?.close();
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

describe('promtool check metrics', () => {
  it('finds no problem in the /metrics text after activity', async () => {
    if (!existsSync(PROMTOOL)) {
      throw new Error(`${PROMTOOL} not found: install Debian's prometheus package (apt-get install -y prometheus); CI installs it`);
    }
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/carrier_sync_items_received_total\{kind="collecting"\} 3/);
    expect(text).toMatch(/carrier_sync_items_duplicates_total\{kind="collecting"\} 1/);
    expect(text).toMatch(/carrier_sync_queue_depth\{kind="cte",state="delayed"\} 1/);
    expect(text).toMatch(/carrier_sync_api_429_total 2/);
    const result = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
    const problems = `${result.stdout}${result.stderr}`.trim();
    expect(problems, `promtool reported:\n${problems}`).toBe('');
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(0);
  });
});
