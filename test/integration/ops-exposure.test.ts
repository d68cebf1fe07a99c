/**
 * The ops server fails closed beyond loopback: bound to 0.0.0.0 without credentials, `/ui` (and all
 * under it) and `POST /events` answer 403 naming the variable to set, while `/healthz`, `/readyz`
 * and `/metrics` stay open. With the credentials set they ask for them; on loopback nothing is
 * closed. Requests go to 127.0.0.1 only, whatever the server is bound to.
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { DeliveryConfig } from '../../src/config/schema.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import { createAuthGate } from '../../src/gate/auth-gate.js';
import { createDedupMemory } from '../../src/gate/event-claims.js';
import { collectingJobId } from '../../src/queue/enqueue.js';
import { createKeys, ITEM_KINDS } from '../../src/store/keys.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { createStats } from '../../src/store/stats.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const DELIVERY = { maxAttempts: 3, backoffMs: 1000, completedRetentionSec: 3600 } as DeliveryConfig;
const UI_PASSWORD = 'ui-pass-Secret-3';
const INGEST_TOKEN = 'ingest-tok-Secret-4';

const prefix = uniquePrefix('exposure');
const redis = connectRedis(testRedisUrl(), 'exposure-test');
const keys = createKeys(prefix);
let queues: QueueSet;
let server: OpsServer | undefined;
const logLines: string[] = [];

async function start(host: string, credentials: { uiPassword?: string; ingestToken?: string }): Promise<OpsServer> {
  const stats = createStats(redis, keys.stats);
  const authGate = createAuthGate(
    redis,
    keys,
    ITEM_KINDS.map((kind) => queues.items[kind]),
  );
  const metrics = createMetrics();
  metrics.attach({
    stats,
    queues: queues.items,
    isAuthPaused: async () => false,
    refusalCounts: async () => ({}),
    outcomeBacklog: async () => [],
    isReady: null,
    ratePerMinute: 300,
    maxQueued: 5000,
  });
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  server = await startOpsServer({
    host,
    port: 0,
    uiPassword: credentials.uiPassword ?? null,
    ingestToken: credentials.ingestToken ?? null,
    maxIngestBytes: 4096,
    metrics,
    queues: queues.items,
    enqueueDeps: { redis, keys, queues, dedup: createDedupMemory(redis, keys, 30), stats, clock: systemClock, retentionSec: 3600 },
    readiness: createReadiness({ redis, authGate, isDraining: () => false }),
    overview: { authGate, ratePerMinute: 300, maxQueued: 5000, spoolId: null, inboxCounts: async () => ({}) },
    logger: createLogger({ level: 'info', destination }),
  });
  // Whatever the bind address, this test talks to the loopback interface only.
  expect(new URL(server.url).hostname).toBe('127.0.0.1');
  return server;
}

const basic = (password: string): string => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;

function postEvent(ops: OpsServer, deliveryId: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${ops.url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ delivery_id: deliveryId, event_at: '2026-04-01T10:00:00Z' }),
  });
}

const isQueued = async (deliveryId: string): Promise<boolean> =>
  (await queues.items.collecting.getJobState(collectingJobId(deliveryId, '2026-04-01T10:00:00Z'))) !== 'unknown';

beforeAll(() => {
  queues = openQueues(redis, prefix, DELIVERY);
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(async () => {
  await queues.close();
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

describe('bound to 0.0.0.0 without credentials', () => {
  it('/ui and everything under it answer 403 naming CARRIER_SYNC_UI_PASSWORD', async () => {
    const ops = await start('0.0.0.0', {});
    for (const path of [
      '/ui',
      '/ui/',
      '/ui/queues/api/queues',
      '/ui/queues',
      '/ui/queues/queue/label',
      '/ui/static/js/main.js',
      '/ui/no-such-page',
      '/%75i',
      '//ui/queues/api/queues',
      '/ui?x=1',
    ]) {
      const response = await fetch(`${ops.url}${path}`);
      expect({ path, status: response.status }).toEqual({ path, status: 403 });
      const body = (await response.json()) as { message: string; variable: string };
      expect(body.variable).toBe('CARRIER_SYNC_UI_PASSWORD');
      expect(body.message).toContain('CARRIER_SYNC_UI_PASSWORD');
    }
    // The dashboard's destructive API is closed too.
    const clean = await fetch(`${ops.url}/ui/queues/api/queues/label/clean/failed`, { method: 'PUT' });
    expect(clean.status).toBe(403);
  });

  it('POST /events answers 403 naming CARRIER_SYNC_INGEST_TOKEN and queues nothing', async () => {
    const ops = await start('0.0.0.0', {});
    const response = await postEvent(ops, 'OPEN-1');
    expect(response.status).toBe(403);
    const body = (await response.json()) as { message: string; variable: string };
    expect(body.variable).toBe('CARRIER_SYNC_INGEST_TOKEN');
    expect(body.message).toContain('CARRIER_SYNC_INGEST_TOKEN');
    expect(await isQueued('OPEN-1')).toBe(false);
    // A token the server does not expect changes nothing.
    expect((await postEvent(ops, 'OPEN-1', { authorization: 'Bearer guess' })).status).toBe(403);
  });

  it('/healthz, /readyz and /metrics stay open', async () => {
    const ops = await start('0.0.0.0', {});
    expect((await fetch(`${ops.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${ops.url}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${ops.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('carrier_sync_items_received_total');
  });

  it('says at start which variable opens what', async () => {
    logLines.length = 0;
    await start('0.0.0.0', {});
    const warnings = logLines.map((line) => JSON.parse(line) as { level: number; set?: string }).filter((line) => line.level === 40);
    expect(warnings.map((line) => line.set).sort()).toEqual(['CARRIER_SYNC_INGEST_TOKEN', 'CARRIER_SYNC_UI_PASSWORD']);
  });

  it('its listening line says it is bound to every address, beside the loopback URL this host reaches it at', async () => {
    logLines.length = 0;
    const ops = await start('0.0.0.0', {});
    const listening = logLines
      .map((line) => JSON.parse(line) as { msg: string; url?: string; boundTo?: string })
      .find((line) => line.msg === 'ops server listening');
    expect(listening).toMatchObject({ url: ops.url, boundTo: `0.0.0.0:${ops.port}` });
    expect(ops.url).toBe(`http://127.0.0.1:${ops.port}`);
  });
});

describe('bound to 0.0.0.0 with credentials', () => {
  it('/ui asks for the password and serves the dashboard with it; POST /events takes the token', async () => {
    const ops = await start('0.0.0.0', { uiPassword: UI_PASSWORD, ingestToken: INGEST_TOKEN });
    expect((await fetch(`${ops.url}/ui`)).status).toBe(401);
    expect((await fetch(`${ops.url}/ui`, { headers: { authorization: basic(UI_PASSWORD) } })).status).toBe(200);
    expect((await postEvent(ops, 'AUTH-2')).status).toBe(401);
    expect((await postEvent(ops, 'AUTH-2', { authorization: `Bearer ${INGEST_TOKEN}` })).status).toBe(202);
    expect(await isQueued('AUTH-2')).toBe(true);
  });

  it('each credential opens only its own door', async () => {
    const ops = await start('0.0.0.0', { uiPassword: UI_PASSWORD });
    expect((await fetch(`${ops.url}/ui/queues/api/queues`, { headers: { authorization: basic(UI_PASSWORD) } })).status).toBe(200);
    expect((await postEvent(ops, 'HALF-1')).status).toBe(403);
    expect(await isQueued('HALF-1')).toBe(false);
  });
});

describe('bound to loopback without credentials', () => {
  it('/ui and POST /events work as before', async () => {
    const ops = await start('127.0.0.1', {});
    expect((await fetch(`${ops.url}/ui`)).status).toBe(200);
    expect((await fetch(`${ops.url}/ui/queues/api/queues`)).status).toBe(200);
    expect((await postEvent(ops, 'LOCAL-1')).status).toBe(202);
    expect(await isQueued('LOCAL-1')).toBe(true);
  });
});
