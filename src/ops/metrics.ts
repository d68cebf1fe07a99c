/**
 * Prometheus metrics. Item counters and queue depths are read from Redis at scrape time, so every
 * process's `/metrics` shows the deployment's totals; the API request histogram is this process's
 * own (a worker process's requests show on its own ops port).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queue } from 'bullmq';
import { ITEM_KINDS, SPOOL_KINDS, type ItemKind } from '../store/keys.js';
import type { Stats } from '../store/stats.js';
import { appVersion } from '../version.js';

export interface RequestSample {
  endpoint: string;
  status: number | 'network' | 'timeout';
  durationMs: number;
}

export interface Metrics {
  registry: Registry;
  observeRequest(sample: RequestSample): void;
}

export interface MetricsSources {
  stats: Stats;
  queues: Readonly<Record<ItemKind, Queue>>;
  isAuthPaused(): Promise<boolean>;
  /** Files refused locally, by error code, deployment-wide (`store/activity.ts`). */
  refusalCounts(): Promise<Record<string, number>>;
  /** Outcome messages per spool (`queue/outcome-list.ts`): files waiting to be moved. */
  outcomeBacklog(): Promise<Array<{ spoolId: string; waiting: number; retrying: number; failed: number }>>;
  /** The spool this process watches and whether its disk is full; absent or null without the watcher role. */
  spoolDisk?: () => { spoolId: string | null; isFull: boolean };
  /** The inbox kinds whose files may not be moved out of it now (`spool/claims-refused.ts`), or null; absent without the watcher role. */
  claimsRefused?: () => { kinds: readonly string[] } | null;
  /** What `/readyz` would answer; null in a process without the ops server. */
  isReady: (() => Promise<boolean>) | null;
  ratePerMinute: number;
  maxQueued: number;
  /** Redis outages this process has seen (`store/redis-health.ts`); absent: not counted. */
  redisOutages?: () => number;
  /** Whether Redis refuses this process's writes now (OOM, NOREPLICAS, MISCONF: `store/redis-health.ts`). */
  redisWritesRefused?: () => boolean;
  /** The watchdog sees a stall (runtime/watchdog/watchdog.ts). */
  isStalled?: () => boolean;
  /** Spans tracing dropped (queue full, export failed: runtime/tracing.ts); absent: tracing is off. */
  spansDropped?: () => { queueFull: number; exportFailed: number };
  /** Notification attempts by channel and result (`store/notify-record.ts`), deployment-wide. */
  notificationCounts?: () => Promise<Array<{ channel: string; result: string; count: number }>>;
}

const STATES = ['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized'] as const;

/** The sources a scrape reads; undefined until `attach` (then those metrics show nothing yet). */
type ReadSources = () => MetricsSources | undefined;

/** One group of metrics: defines them on the registry; their `collect` reads the sources at scrape time. */
type MetricGroup = (registry: Registry, sources: ReadSources) => void;

/** After the Node.js defaults and the API metrics, in this order on `/metrics`; a new group goes in this list. */
const GROUPS: readonly MetricGroup[] = [processMetrics, itemCounters, queueGauges, spoolMetrics, readinessGauges, notificationMetrics];

export function createMetrics(): Metrics & { attach(sources: MetricsSources): void } {
  const registry = new Registry();
  let sources: MetricsSources | undefined;
  nodeMetrics(registry);
  const observeRequest = apiMetrics(registry);
  for (const define of GROUPS) define(registry, () => sources);
  return {
    registry,
    observeRequest,
    attach(next) {
      sources = next;
    },
  };
}

function nodeMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'carrier_sync_' });
  // prom-client names three gauges `*_total`, which Prometheus reserves for counters (`promtool
  // check metrics` fails on them); the same numbers, by type, stay in the gauges without the suffix.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(`carrier_sync_${name}`);
  }
}

/** This process's own requests to the API; returns what the API client calls after each one. */
function apiMetrics(registry: Registry): Metrics['observeRequest'] {
  const requestSeconds = new Histogram({
    name: 'carrier_sync_api_request_seconds',
    help: 'Duration of requests to the Delivery Logistics API, by endpoint and HTTP status.',
    labelNames: ['endpoint', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const tooMany = new Counter({
    name: 'carrier_sync_api_429_total',
    help: 'HTTP 429 answers received by this process.',
    registers: [registry],
  });
  return (sample) => {
    requestSeconds.observe({ endpoint: sample.endpoint, status: String(sample.status) }, sample.durationMs / 1000);
    if (sample.status === 429) tooMany.inc();
  };
}

function processMetrics(registry: Registry, read: ReadSources): void {
  new Gauge({
    name: 'carrier_sync_build_info',
    help: 'Always 1; its labels say which version of carrier-sync, on which Node.js, this process runs.',
    labelNames: ['version', 'node'],
    registers: [registry],
  }).set({ version: appVersion(), node: process.version }, 1);
  new Counter({
    name: 'carrier_sync_redis_outages_total',
    help: 'Times this process lost its Redis connection (one per outage, however many connections and reconnect attempts).',
    registers: [registry],
    collect() {
      const sources = read();
      if (sources?.redisOutages === undefined) return;
      this.reset();
      this.inc(sources.redisOutages());
    },
  });
  new Counter({
    name: 'carrier_sync_trace_spans_dropped_total',
    help: 'Spans this process did not export: the export queue was full (queue_full) or the OTLP endpoint did not take a batch (export_failed). Only with tracing on.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const dropped = read()?.spansDropped?.();
      if (dropped === undefined) return;
      this.reset();
      this.inc({ reason: 'queue_full' }, dropped.queueFull);
      this.inc({ reason: 'export_failed' }, dropped.exportFailed);
    },
  });
  new Gauge({
    name: 'carrier_sync_redis_writes_refused',
    help: '1 while Redis refuses writes (maxmemory reached under noeviction, min-replicas-to-write not met): claims, retries and moves wait.',
    registers: [registry],
    collect() {
      const refused = read()?.redisWritesRefused;
      if (refused !== undefined) this.set(refused() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'carrier_sync_stalled',
    help: '1 while the watchdog sees a stall in this process (work waiting with no progress, the delivery thread not answering, a Redis connection ended): /readyz says what.',
    registers: [registry],
    collect() {
      const isStalled = read()?.isStalled;
      if (isStalled !== undefined) this.set(isStalled() ? 1 : 0);
    },
  });
}

/** Counters whose value lives in Redis: each scrape sets them to the deployment's total. */
function itemCounters(registry: Registry, read: ReadSources): void {
  const totals = (name: string, help: string, counter: Parameters<Stats['add']>[0]): void => {
    new Counter({
      name,
      help,
      labelNames: ['kind'],
      registers: [registry],
      async collect() {
        const sources = read();
        if (sources === undefined) return;
        const counts = await sources.stats.read();
        this.reset();
        for (const kind of ITEM_KINDS) this.inc({ kind }, counts[counter][kind]);
      },
    });
  };
  totals('carrier_sync_items_received_total', 'Items taken in (files, records, requests), by kind.', 'received');
  totals('carrier_sync_items_sent_total', 'Items the API accepted, by kind.', 'sent');
  totals('carrier_sync_items_duplicates_total', 'Collecting events not sent because their event_at repeated an earlier one, by kind.', 'duplicates');
  totals('carrier_sync_items_failed_total', 'Items refused locally (invalid) and moved to failed/, by kind.', 'failed');
  totals('carrier_sync_items_dead_lettered_total', 'Items dead-lettered after the API refused them or retries ran out, by kind.', 'dead_lettered');
  totals('carrier_sync_items_superseded_total', 'Documents not sent because a newer one for the same delivery replaced them, by kind.', 'superseded');
  totals('carrier_sync_rate_limited_total', 'Times an item was held back by an API 429, by kind (all processes).', 'rate_limited');
}

function queueGauges(registry: Registry, read: ReadSources): void {
  new Gauge({
    name: 'carrier_sync_queue_depth',
    help: 'Jobs in each queue by state.',
    labelNames: ['kind', 'state'],
    registers: [registry],
    async collect() {
      const sources = read();
      if (sources === undefined) return;
      for (const kind of ITEM_KINDS) {
        const counts = await sources.queues[kind].getJobCounts(...STATES);
        for (const state of STATES) this.set({ kind, state }, counts[state] ?? 0);
      }
    },
  });
  new Gauge({
    name: 'carrier_sync_auth_paused',
    help: '1 while the queues are paused because the API refused the key (401).',
    registers: [registry],
    async collect() {
      const sources = read();
      if (sources !== undefined) this.set((await sources.isAuthPaused()) ? 1 : 0);
    },
  });
}

/** Files in the spool: refused ones, outcomes still to move, a full disk. */
function spoolMetrics(registry: Registry, read: ReadSources): void {
  new Counter({
    name: 'carrier_sync_files_refused_total',
    help: 'Files refused locally (invalid, encrypted, truncated, …) and moved to failed/, by error code (all processes).',
    labelNames: ['code'],
    registers: [registry],
    async collect() {
      const sources = read();
      if (sources === undefined) return;
      const counts = await sources.refusalCounts();
      this.reset();
      for (const [code, count] of Object.entries(counts)) this.inc({ code }, count);
    },
  });
  new Gauge({
    name: 'carrier_sync_outcomes_pending',
    help: 'Outcome messages of a spool not yet applied (files still to move to archive/ or failed/): waiting, retrying after a failed move, failed (moves given up; the periodic reconcile takes those files up).',
    labelNames: ['spool', 'state'],
    registers: [registry],
    async collect() {
      const sources = read();
      if (sources === undefined) return;
      this.reset();
      for (const backlog of await sources.outcomeBacklog()) {
        for (const state of ['waiting', 'retrying', 'failed'] as const) this.set({ spool: backlog.spoolId, state }, backlog[state]);
      }
    },
  });
  new Gauge({
    name: 'carrier_sync_spool_disk_full',
    help: "1 while writes in the spool fail because its disk (or quota) is full: files wait in the inbox (this process's spool).",
    labelNames: ['spool'],
    registers: [registry],
    collect() {
      const disk = read()?.spoolDisk?.() ?? null;
      this.reset();
      if (disk !== null && disk.spoolId !== null) this.set({ spool: disk.spoolId }, disk.isFull ? 1 : 0);
    },
  });
  new Gauge({
    name: 'carrier_sync_spool_inbox_refused',
    help: "1 while files of this inbox may not be moved out of it (a permission, a read-only file system): they wait there, nothing of them is sent (this process's spool).",
    labelNames: ['spool', 'kind'],
    registers: [registry],
    collect() {
      const sources = read();
      const spoolId = sources?.spoolDisk?.().spoolId ?? null;
      this.reset();
      if (sources?.claimsRefused === undefined || spoolId === null) return;
      const refused = sources.claimsRefused()?.kinds ?? [];
      for (const kind of SPOOL_KINDS) this.set({ spool: spoolId, kind }, refused.includes(kind) ? 1 : 0);
    },
  });
}

/** What `/readyz` answers, and the limits the limiter and the watcher work to. */
function readinessGauges(registry: Registry, read: ReadSources): void {
  new Gauge({
    name: 'carrier_sync_ready',
    help: '1 while this process answers /readyz with 200 (Redis answers, no 401 pause, not draining).',
    registers: [registry],
    async collect() {
      const isReady = read()?.isReady ?? null;
      if (isReady !== null) this.set((await isReady()) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'carrier_sync_rate_limit_per_minute',
    help: 'Requests per minute the API allows this deployment (delivery.ratePerMinute).',
    registers: [registry],
    collect() {
      const sources = read();
      if (sources !== undefined) this.set(sources.ratePerMinute);
    },
  });
  new Gauge({
    name: 'carrier_sync_max_queued',
    help: 'Backlog per kind at which the watcher stops taking files (delivery.maxQueued).',
    registers: [registry],
    collect() {
      const sources = read();
      if (sources !== undefined) this.set(sources.maxQueued);
    },
  });
}

function notificationMetrics(registry: Registry, read: ReadSources): void {
  new Counter({
    name: 'carrier_sync_notifications_total',
    help: 'Notification messages sent, and failed attempts (each retry that failed), by channel (all processes).',
    labelNames: ['channel', 'result'],
    registers: [registry],
    async collect() {
      const counts = read()?.notificationCounts;
      if (counts === undefined) return;
      this.reset();
      for (const { channel, result, count } of await counts()) this.inc({ channel, result }, count);
    },
  });
}
