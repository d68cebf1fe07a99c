import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import { countActivity, readRefusals, REFUSALS_KEPT } from '../../src/store/activity.js';
import { recordRefusal } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { readOverview, type Overview } from '../../src/ops/overview-data.js';
import { createAttemptLog } from '../../src/queue/attempts.js';
import { createAuthGate, type AuthGate } from '../../src/gate/auth-gate.js';
import { createDedupMemory } from '../../src/gate/event-claims.js';
import { collectingJobId } from '../../src/queue/enqueue.js';
import { createKeys, ITEM_KINDS } from '../../src/store/keys.js';
import { createLease } from '../../src/store/lease.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { createStats } from '../../src/store/stats.js';
import { TEST_DELIVERY } from '../support/delivery.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

/** What package.json says, read here independently of src/version.ts. */
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const UI_PASSWORD = 'ui-pass-Secret-1';
const INGEST_TOKEN = 'ingest-tok-Secret-2';
const MAX_INGEST_BYTES = 4096;

const prefix = uniquePrefix('ops');
const redis = connectRedis(testRedisUrl(), 'ops-test');
const keys = createKeys(prefix);
let queues: QueueSet;
let authGate: AuthGate;
let server: OpsServer;
let isDraining = false;
const logLines: string[] = [];

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const postEvents = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${INGEST_TOKEN}` }): Promise<Response> =>
  fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

beforeAll(async () => {
  queues = openQueues(redis, prefix, TEST_DELIVERY);
  const stats = createStats(redis, keys.stats);
  const dedup = createDedupMemory(redis, keys, 30);
  authGate = createAuthGate(
    redis,
    keys,
    ITEM_KINDS.map((kind) => queues.items[kind]),
  );
  const readiness = createReadiness({ redis, authGate, isDraining: () => isDraining });
  const metrics = createMetrics();
  metrics.attach({
    stats,
    queues: queues.items,
    isAuthPaused: async () => (await authGate.failure()) !== null,
    refusalCounts: async () => (await readRefusals(redis, keys)).counts,
    outcomeBacklog: async () => [],
    isReady: async () => (await readiness()).isReady,
    ratePerMinute: TEST_DELIVERY.ratePerMinute,
    maxQueued: TEST_DELIVERY.maxQueued,
  });
  metrics.observeRequest({ endpoint: 'collecting', status: 200, durationMs: 42 });
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
    host: '127.0.0.1',
    port: 0,
    uiPassword: UI_PASSWORD,
    ingestToken: INGEST_TOKEN,
    maxIngestBytes: MAX_INGEST_BYTES,
    metrics,
    queues: queues.items,
    enqueueDeps: { redis, keys, queues, dedup, stats, clock: systemClock, retentionSec: 3600 },
    readiness,
    overview: {
      authGate,
      ratePerMinute: TEST_DELIVERY.ratePerMinute,
      maxQueued: TEST_DELIVERY.maxQueued,
      spoolId: 'ops-spool',
      inboxCounts: async () => ({ labels: 2 }),
    },
    logger: createLogger({ level: 'debug', destination }),
  });
});

afterAll(async () => {
  await server?.close();
  await server?.close(); // idempotent
  await queues?.close();
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

describe('health and readiness', () => {
  it('/healthz answers 200 {status: ok, version} while the process is alive', async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', version: PACKAGE_VERSION });
  });

  it('/readyz is 200 while Redis answers and the queues are not auth-paused', async () => {
    const response = await fetch(`${server.url}/readyz`);
    expect(response.status).toBe(200);
  });

  it('/readyz turns 503 with the 401 message and time once the auth gate trips, and 200 again once cleared', async () => {
    await authGate.trip({ at: '2026-03-01T12:00:00.000Z', endpoint: 'label', message: 'API refused the carrier key' });
    try {
      const response = await fetch(`${server.url}/readyz`);
      expect(response.status).toBe(503);
      const body = (await response.json()) as { status: string; reason: string };
      expect(body.status).toBe('unready');
      expect(body.reason).toContain('API refused the carrier key');
      expect(body.reason).toContain('2026-03-01T12:00:00.000Z');
      expect(body.reason).toContain('401');
    } finally {
      await authGate.clear();
    }
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('/readyz is 503 and POST /events refuses with 503 while draining', async () => {
    server.setDraining(true);
    try {
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reason: string }).reason).toMatch(/draining/);
      const ingest = await postEvents({ delivery_id: 'DRAIN-1', event_at: '2026-01-01T00:00:00Z' });
      expect(ingest.status).toBe(503);
      expect(await ingest.json()).toHaveProperty('message');
    } finally {
      server.setDraining(false);
    }
    isDraining = true; // the runtime's own draining flag, seen through createReadiness
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    } finally {
      isDraining = false;
    }
  });

  it('readiness says Redis is not answering when its connection is down', async () => {
    const dead = connectRedis('redis://127.0.0.1:1', 'ops-test-dead');
    dead.on('error', () => {});
    try {
      const readiness = createReadiness({ redis: dead, authGate, isDraining: () => false, timeoutMs: 300 });
      const state = await readiness();
      expect(state.isReady).toBe(false);
      expect(state.reason).toMatch(/redis is not answering/);
    } finally {
      dead.disconnect();
    }
  });
});

describe('/metrics', () => {
  it('serves Prometheus text with the item counters, queue depth and API request histogram', async () => {
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toContain('carrier_sync_items_received_total');
    expect(text).toContain('carrier_sync_queue_depth');
    expect(text).toContain('carrier_sync_api_request_seconds');
    expect(text).toMatch(/carrier_sync_api_request_seconds_count\{endpoint="collecting",status="200"\} 1/);
  });

  it('says which version runs on which Node.js: carrier_sync_build_info{version,node} 1', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toContain(`carrier_sync_build_info{version="${PACKAGE_VERSION}",node="${process.version}"} 1`);
    expect(text.match(/^carrier_sync_build_info\{/gm)).toHaveLength(1);
  });
});

describe('/ui', () => {
  it('answers 401 with a Basic challenge without the password or with a wrong one', async () => {
    const bare = await fetch(`${server.url}/ui`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await fetch(`${server.url}/ui`, { headers: { authorization: basic('admin', 'wrong') } })).status).toBe(401);
    expect((await fetch(`${server.url}/ui`, { headers: { authorization: basic('root', UI_PASSWORD) } })).status).toBe(401);
    expect((await fetch(`${server.url}/ui/queues/api/queues`)).status).toBe(401);
  });

  it('serves the dashboard and its API with the password', async () => {
    const page = await fetch(`${server.url}/ui`, { headers: { authorization: basic('admin', UI_PASSWORD) } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const api = await fetch(`${server.url}/ui/queues/api/queues`, { headers: { authorization: basic('admin', UI_PASSWORD) } });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: Array<{ name: string }> };
    expect(body.queues.map((queue) => queue.name).sort()).toEqual(['collecting', 'cte', 'label']);
  });

  it('bull-board (loaded at the first /ui/queues request) serves its page, its assets and its 404s through the /ui scope', async () => {
    const auth = { authorization: basic('admin', UI_PASSWORD) };
    const page = await fetch(`${server.url}/ui/queues`, { headers: auth });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('carrier-sync');
    // The page's assets are relative to its <base href="/ui/queues/">.
    expect(html).toContain('<base href="/ui/queues/"');
    const asset = /src="(static\/js\/main\.[^"]+)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const file = await fetch(`${server.url}/ui/queues/${asset ?? ''}`, { headers: auth });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toMatch(/javascript/);
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect((await fetch(`${server.url}/ui/queues/${asset ?? ''}`)).status).toBe(401);
    const queuePage = await fetch(`${server.url}/ui/queues/queue/label`, { headers: auth });
    expect(queuePage.status).toBe(200);
    expect((await fetch(`${server.url}/ui/queues/no/such/page/here`, { headers: auth })).status).toBe(404);
  });
});

describe('/ui overview', () => {
  const auth = { authorization: basic('admin', UI_PASSWORD) };
  const overview = async (): Promise<Overview> => (await (await fetch(`${server.url}/ui/overview.json`, { headers: auth })).json()) as Overview;

  it('counts per minute in Redis: requests, sends, 429s and dead letters of this minute and one 30 minutes ago; older than an hour is off the chart', async () => {
    // The chart ends at the server's minute: the counts and the read must fall in one minute (a run
    // that began in a minute's last milliseconds, on a busy machine, read the next one's chart).
    await waitFor(() => Date.now() % 60_000 < 50_000, { what: 'a minute with 10 s left', timeoutMs: 15_000 });
    const now = Date.now();
    await countActivity(redis, keys, 'requests', now, 7);
    await countActivity(redis, keys, 'sent', now, 5);
    await countActivity(redis, keys, 'rate_limited', now - 30 * 60_000, 2);
    await countActivity(redis, keys, 'dead_lettered', now - 30 * 60_000);
    await countActivity(redis, keys, 'sent', now - 61 * 60_000, 100);
    const o = await overview();
    const a = o.details!.activity;
    expect(a.at).toHaveLength(60);
    expect(a.at[59]).toBe(Math.floor(now / 60_000) * 60);
    expect(a.requests[59]).toBe(7);
    expect(a.sent.reduce((x, y) => x + y, 0)).toBe(5);
    expect(a.rateLimited[29]).toBe(2);
    expect(a.deadLettered[29]).toBe(1);
    expect(o.ratePerMinute).toBe(TEST_DELIVERY.ratePerMinute);
    expect(await redis.ttl(keys.activity(Math.floor(now / 60_000)))).toBeGreaterThan(3600);
  });

  it('keeps refusals by code and only the latest 20, newest first; a long reason is cut', async () => {
    for (let i = 0; i < REFUSALS_KEPT + 5; i += 1) {
      await recordRefusal(
        redis,
        keys,
        {
          at: new Date().toISOString(),
          kind: 'labels',
          file: `F-${i}.pdf`,
          code: i % 5 === 0 ? 'LABEL_ENCRYPTED' : 'LABEL_TRUNCATED',
          reason: 'x'.repeat(1000),
        },
        Date.now(),
      );
    }
    const { refusals } = (await overview()).details!;
    expect(refusals.total).toBe(25);
    expect(refusals.byCode).toEqual([
      { code: 'LABEL_TRUNCATED', count: 20 },
      { code: 'LABEL_ENCRYPTED', count: 5 },
    ]);
    expect(refusals.latest).toHaveLength(REFUSALS_KEPT);
    expect(refusals.latest[0]!.file).toBe('F-24.pdf');
    expect(refusals.latest[0]!.reason.length).toBeLessThanOrEqual(300);
  });

  it('shows the inbox counts the runtime hands it, "n/a" for a kind it cannot see, and a 401 pause as the state', async () => {
    const page = await (await fetch(`${server.url}/ui`, { headers: auth })).text();
    expect(page).toMatch(/data-figure="inbox-label"[^>]*>2</);
    expect(page).toMatch(/data-figure="inbox-cte"[^>]*>n\/a</);
    expect(page).toContain('src="/ui/assets/uPlot.iife.min.js"');
    expect((await fetch(`${server.url}/ui/assets/uPlot.iife.min.js`, { headers: auth })).status).toBe(200);
    await authGate.trip({ at: '2026-01-02T03:04:05.000Z', endpoint: 'label', message: 'Invalid <key>' });
    try {
      const o = await overview();
      expect(o.state).toMatchObject({
        code: 'paused',
        since: '2026-01-02T03:04:05.000Z',
        detail: 'the API answered HTTP 401 to a label sent: “Invalid <key>”',
      });
      const paused = await (await fetch(`${server.url}/ui`, { headers: auth })).text();
      expect(paused).toContain('sent: “Invalid &#60;key&#62;”');
      expect(paused).not.toContain('Invalid <key>');
    } finally {
      await authGate.clear();
    }
  });

  it("shows this process's version in the footer, and the spool holder's version beside its name", async () => {
    const lease = createLease(redis, keys.spoolLease('ops-spool'));
    const holder = { id: 'ops-holder', host: 'ops-host', pid: 4242, since: new Date().toISOString() };
    expect((await lease.acquire(holder, 60_000)).isAcquired).toBe(true);
    try {
      const o = await overview();
      expect(o).toMatchObject({ version: PACKAGE_VERSION, node: process.version });
      expect(o.details?.spoolHolder).toMatchObject({ host: 'ops-host', pid: 4242, version: PACKAGE_VERSION });
      const page = await (await fetch(`${server.url}/ui`, { headers: auth })).text();
      expect(page).toMatch(new RegExp(`<footer class="foot">carrier-sync <b data-figure="version">${PACKAGE_VERSION.replace(/\./g, '\\.')}</b>`));
      expect(page).toContain(`version <span data-figure="spool-holder-version">${PACKAGE_VERSION}</span>`);
    } finally {
      await lease.release(holder.id);
    }
  });

  it('says draining while the process stops', async () => {
    server.setDraining(true);
    try {
      expect((await overview()).state.code).toBe('draining');
    } finally {
      server.setDraining(false);
    }
    expect((await overview()).state.code).not.toBe('draining');
  });

  it('refuses a replay without the page header (403), from another origin (403), or without an id or code (400)', async () => {
    const post = (body: unknown, headers: Record<string, string>): Promise<Response> =>
      fetch(`${server.url}/ui/dead-letters/replay`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    expect((await post({ id: 'label.X.1' }, {})).status).toBe(403);
    expect((await post({ id: 'label.X.1' }, { 'x-carrier-sync-ui': 'replay', origin: 'http://elsewhere.example:8080' })).status).toBe(403);
    expect((await post({}, { 'x-carrier-sync-ui': 'replay' })).status).toBe(400);
    expect((await post({ id: 'label.X.1', code: 'A' }, { 'x-carrier-sync-ui': 'replay' })).status).toBe(400);
    expect((await post({ id: 'label.NOT-THERE.1' }, { 'x-carrier-sync-ui': 'replay', origin: server.url })).status).toBe(404);
    expect((await fetch(`${server.url}/ui/dead-letters/replay`, { method: 'POST', headers: { 'x-carrier-sync-ui': 'replay' } })).status).toBe(401);
  });

  it('says Redis is unreachable when its connection is down, without waiting on it', async () => {
    const down = connectRedis(testRedisUrl(), 'ops-test-down');
    await down.ping();
    down.disconnect();
    const o = await readOverview({
      redis: down,
      keys,
      queues,
      attempts: createAttemptLog(down, keys),
      dedup: createDedupMemory(down, keys, 30),
      authGate,
      clock: systemClock,
      ratePerMinute: 300,
      maxQueued: 5000,
      spoolId: null,
      inboxCounts: async () => ({}),
      isDraining: () => false,
    });
    expect(o.state.code).toBe('redis-down');
    expect(o.details).toBeNull();
  });
});

describe('POST /events', () => {
  it('answers 401 {message} without the bearer token or with a wrong one', async () => {
    const record = { delivery_id: 'AUTH-1', event_at: '2026-01-01T00:00:00Z' };
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer nope' }, { authorization: basic('admin', INGEST_TOKEN) }];
    for (const headers of attempts) {
      const response = await postEvents(record, headers);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ message: expect.any(String) });
    }
    expect(await queues.items.collecting.getJobState(collectingJobId('AUTH-1', '2026-01-01T00:00:00Z'))).toBe('unknown');
  });

  it('queues a single object and answers 202 with its verdict', async () => {
    const response = await postEvents({ delivery_id: 'ONE-1', event_at: '2026-02-01T10:00:00-03:00' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: 1, duplicates: 0, invalid: 0, results: [{ index: 0, status: 'queued' }] });
    const state = await queues.items.collecting.getJobState(collectingJobId('ONE-1', '2026-02-01T13:00:00Z'));
    expect(['waiting', 'delayed', 'prioritized']).toContain(state);
  });

  it('gives each record of an array its verdict by index; a bad record does not hold back the others', async () => {
    const response = await postEvents([
      { delivery_id: 'ARR-1', event_at: '2026-02-02T10:00:00Z' },
      { delivery_id: 'ARR-1', event_at: '2026-02-02 10:00' },
      { delivery_id: 'bad/id', event_at: '2026-02-02T10:00:00Z' },
      'not an object',
      { delivery_id: 'ARR-2', event_at: '2026-02-02T11:00:00Z', extra: true },
    ]);
    expect(response.status).toBe(202);
    const body = (await response.json()) as { accepted: number; invalid: number; duplicates: number; results: Array<Record<string, unknown>> };
    expect(body).toMatchObject({ accepted: 2, duplicates: 0, invalid: 3 });
    expect(body.results.map((result) => [result['index'], result['status'], result['code']])).toEqual([
      [0, 'queued', undefined],
      [1, 'invalid', 'EVENT_BAD_TIME'],
      [2, 'invalid', 'EVENT_BAD_DELIVERY_ID'],
      [3, 'invalid', 'EVENT_BAD_RECORD'],
      [4, 'queued', undefined],
    ]);
    for (const result of body.results.filter((r) => r['status'] === 'invalid')) expect(result['message']).toEqual(expect.any(String));
  });

  it('counts the same instant written in another offset as a duplicate, across requests and within one', async () => {
    const first = await postEvents({ delivery_id: 'DUP-1', event_at: '2026-02-03T12:00:00Z' });
    expect(((await first.json()) as { accepted: number }).accepted).toBe(1);
    const response = await postEvents([
      { delivery_id: 'DUP-1', event_at: '2026-02-03T09:00:00-03:00' },
      { delivery_id: 'DUP-1', event_at: '2026-02-03T14:00:00.000+02:00' },
      { delivery_id: 'DUP-2', event_at: '2026-02-03T12:00:00Z' },
      { delivery_id: 'DUP-2', event_at: '2026-02-03T13:00:00.0+01:00' },
    ]);
    expect(response.status).toBe(202);
    const body = (await response.json()) as { results: Array<{ index: number; status: string }> };
    expect(body).toMatchObject({ accepted: 1, duplicates: 3, invalid: 0 });
    expect(body.results.map((result) => result.status)).toEqual(['duplicate', 'duplicate', 'queued', 'duplicate']);
    expect(await queues.items.collecting.getJobCounts('waiting', 'delayed')).toBeDefined();
  });

  it('lets a client retry with the same Idempotency-Key without its events turning into duplicates', async () => {
    const record = [{ delivery_id: 'IDEM-1', event_at: '2026-02-04T12:00:00Z' }];
    const headers = { authorization: `Bearer ${INGEST_TOKEN}`, 'idempotency-key': 'batch-0001' };
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await postEvents(record, headers);
      expect(await response.json()).toMatchObject({ accepted: 1, duplicates: 0 });
    }
    expect(await (await postEvents(record)).json()).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it('answers 413 {message} to a body over maxIngestBytes, and 400 to malformed JSON or a scalar body', async () => {
    const many = Array.from({ length: 200 }, (_unused, i) => ({ delivery_id: `BIG-${i}`, event_at: '2026-02-05T12:00:00Z' }));
    expect(JSON.stringify(many).length).toBeGreaterThan(MAX_INGEST_BYTES);
    const tooLarge = await postEvents(many);
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { message: string }).message).toContain(String(MAX_INGEST_BYTES));
    expect(await queues.items.collecting.getJobState(collectingJobId('BIG-0', '2026-02-05T12:00:00Z'))).toBe('unknown');
    const malformed = await postEvents('{"delivery_id": ');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ message: expect.any(String) });
    expect((await postEvents('42')).status).toBe(400);
  });

  it('logs one info line per ingest request with its counts, and never the token', async () => {
    const ingestLines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === 'events ingested');
    expect(ingestLines.length).toBeGreaterThanOrEqual(4);
    for (const line of ingestLines) {
      expect(line).toMatchObject({ level: 30, accepted: expect.any(Number), duplicates: expect.any(Number), invalid: expect.any(Number) });
    }
    const all = logLines.join('\n');
    expect(all).not.toContain(INGEST_TOKEN);
    expect(all).not.toContain(UI_PASSWORD);
  });
});
