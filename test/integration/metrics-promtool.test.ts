/**
 * `/metrics` must be valid Prometheus exposition text that passes promtool's linter (names, units,
 * `_total` only on counters, HELP on everything), and the alert rules and Grafana dashboard in
 * deploy/ must pass promtool and use only metrics that /metrics has. promtool comes from Debian's
 * `prometheus` package; CI installs it, and a machine without it fails here rather than skipping.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import { readRefusals } from '../../src/store/activity.js';
import { recordRefusal } from '../support/redis.js';
import { createAuthGate } from '../../src/gate/auth-gate.js';
import { createDedupMemory } from '../../src/gate/event-claims.js';
import { createKeys, ITEM_KINDS } from '../../src/store/keys.js';
import { pushOutcome, readOutcomeBacklog } from '../../src/queue/outcome-list.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { createStats } from '../../src/store/stats.js';
import { TEST_DELIVERY } from '../support/delivery.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const PROMTOOL = '/usr/bin/promtool';

const prefix = uniquePrefix('promtool');
const redis = connectRedis(testRedisUrl(), 'promtool-test');
const keys = createKeys(prefix);
let queues: QueueSet;
let server: OpsServer;

beforeAll(async () => {
  queues = openQueues(redis, prefix, TEST_DELIVERY);
  const stats = createStats(redis, keys.stats);
  const authGate = createAuthGate(
    redis,
    keys,
    ITEM_KINDS.map((kind) => queues.items[kind]),
  );
  const readiness = createReadiness({ redis, authGate, isDraining: () => false });
  const metrics = createMetrics();
  metrics.attach({
    stats,
    queues: queues.items,
    isAuthPaused: async () => (await authGate.failure()) !== null,
    refusalCounts: async () => (await readRefusals(redis, keys)).counts,
    outcomeBacklog: () => readOutcomeBacklog(redis, keys),
    isReady: async () => (await readiness()).isReady,
    ratePerMinute: TEST_DELIVERY.ratePerMinute,
    maxQueued: TEST_DELIVERY.maxQueued,
    // A watcher's gauges: the spool's disk and its inboxes' refused moves (the rules read the latter).
    spoolDisk: () => ({ spoolId: 'spool-test', isFull: false }),
    claimsRefused: () => ({ kinds: ['labels'] }),
  });
  server = await startOpsServer({
    host: '127.0.0.1',
    port: 0,
    uiPassword: null,
    ingestToken: null,
    maxIngestBytes: 65_536,
    metrics,
    queues: queues.items,
    enqueueDeps: { redis, keys, queues, dedup: createDedupMemory(redis, keys, 30), stats, clock: systemClock, retentionSec: 3600 },
    readiness,
    overview: { authGate, ratePerMinute: TEST_DELIVERY.ratePerMinute, maxQueued: TEST_DELIVERY.maxQueued, spoolId: null, inboxCounts: async () => ({}) },
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
  // A spool with two files waiting to be moved.
  await redis.sadd(keys.spools, 'prom-spool');
  for (const n of [1, 2]) {
    await pushOutcome(redis, keys, 'prom-spool', {
      kind: 'label',
      jobId: `label.PROM-${n}.abc`,
      deliveryId: `PROM-${n}`,
      result: 'accepted',
      origin: { source: 'spool', spoolId: 'prom-spool', fileName: `PROM-${n}.pdf`, contentId: 'abc' },
      attempts: 1,
      at: new Date().toISOString(),
    });
  }
  await recordRefusal(
    redis,
    keys,
    { at: new Date().toISOString(), kind: 'labels', file: 'ENC-1.pdf', code: 'LABEL_ENCRYPTED', reason: 'the PDF is encrypted' },
    Date.now(),
  );
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
    expect(text).toMatch(/carrier_sync_outcomes_pending\{spool="prom-spool",state="waiting"\} 2/);
    const result = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
    const problems = `${result.stdout}${result.stderr}`.trim();
    expect(problems, `promtool reported:\n${problems}`).toBe('');
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(0);
  });
});

const RULES = 'deploy/prometheus/carrier-sync-rules.yml';
const RULE_TESTS = 'deploy/prometheus/carrier-sync-rules.test.yml';
const DASHBOARD = 'deploy/grafana/carrier-sync.json';

function promtool(...args: string[]): { output: string; status: number | null } {
  if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} not found: install Debian's prometheus package (apt-get install -y prometheus); CI installs it`);
  const result = spawnSync(PROMTOOL, args, { encoding: 'utf8', timeout: 60_000 });
  return { output: `${result.stdout}${result.stderr}`, status: result.status };
}

/** Every PromQL expression of the rules file and of the dashboard's panels. */
function deployExpressions(): Array<{ where: string; expr: string }> {
  const rules = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  const out = rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `${RULES} ${rule.alert}`, expr: rule.expr })));
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  for (const panel of dashboard.panels) for (const target of panel.targets) out.push({ where: `${DASHBOARD} "${panel.title}"`, expr: target.expr });
  return out;
}

describe('alert rules and dashboard in deploy/', () => {
  it('pass promtool check rules', () => {
    const { output, status } = promtool('check', 'rules', RULES);
    expect(status, output).toBe(0);
    expect(output).toMatch(/SUCCESS: 9 rules found/);
  });

  it('pass promtool test rules: each alert fires and clears', () => {
    const { output, status } = promtool('test', 'rules', RULE_TESTS);
    expect(status, output).toBe(0);
    const rules = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string }> }> };
    const tests = readFileSync(RULE_TESTS, 'utf8');
    for (const { alert } of rules.groups.flatMap((group) => group.rules)) {
      // Each alert has a case where it fires (exp_alerts listed) and one where it is clear (exp_alerts: []).
      const cases = [...tests.matchAll(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:(.*)`, 'g'))].map((m) => m[1]!.trim());
      expect(cases, alert).toContain('');
      expect(cases, alert).toContain('[]');
    }
  });

  it('use only metrics that /metrics serves, each with at least one sample after activity', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const sampled = new Set([...text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm)].map((m) => m[1]!));
    const expressions = deployExpressions();
    expect(expressions.length).toBeGreaterThan(15);
    const used = new Set<string>();
    for (const { where, expr } of expressions) {
      const names = [...expr.matchAll(/\bcarrier_sync_[a-z0-9_]+/g)].map((m) => m[0]);
      expect(names.length, `${where} uses no carrier_sync_ metric: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        const isKnown = types.has(name) || types.get(base) === 'histogram';
        expect(isKnown, `${where} uses ${name}, which /metrics does not have`).toBe(true);
        expect(sampled.has(name), `${where} uses ${name}, which has no sample in /metrics`).toBe(true);
        used.add(base);
      }
    }
    for (const needed of [
      'carrier_sync_auth_paused',
      'carrier_sync_ready',
      'carrier_sync_max_queued',
      'carrier_sync_rate_limit_per_minute',
      'carrier_sync_api_request_seconds',
      'carrier_sync_files_refused_total',
    ]) {
      expect(used, `deploy/ should use ${needed}`).toContain(needed);
    }
  });
});
