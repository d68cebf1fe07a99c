/**
 * The ops HTTP server: `/healthz`, `/readyz`, `/metrics`, `/ui` (the overview page, bull-board under
 * `/ui/queues`) and `POST /events`.
 * It never calls the API; ingest goes through the queue like files do.
 *
 * Bound beyond loopback, `/ui` and `POST /events` answer 403 until their credentials are set
 * (exposure.ts); `/healthz`, `/readyz` and `/metrics` stay open.
 *
 * Draining (set at the start of shutdown): `/readyz` turns 503 so load balancers stop sending,
 * and `POST /events` answers 503 so clients retry elsewhere; the rest keeps answering until close.
 * Fastify's own logger stays off: it would log request details we do not want in our logs; we log
 * one line per ingest request and every 5xx ourselves, never a header.
 */
import { createRequire } from 'node:module';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Queue } from 'bullmq';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { appVersion } from '../version.js';
import type { EnqueueDeps } from '../queue/enqueue.js';
import type { ItemKind } from '../store/keys.js';
import { registerDashboard } from './dashboard.js';
import { registerExposureGuard } from './exposure.js';
import { registerIngest, tooLargeMessage } from './ingest.js';
import type { OverviewSources } from './overview-data.js';
import { createAttemptLog } from '../queue/attempts.js';
import type { ReadinessState } from './readiness.js';
import { reachableHost } from './reachable-host.js';
import type { SecretSource } from './secrets.js';

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Basic auth on `/ui` (user `admin`) when set. */
  uiPassword: SecretSource | null;
  /** Bearer token required on `POST /events` when set. */
  ingestToken: SecretSource | null;
  maxIngestBytes: number;
  metrics: { registry: Registry };
  /** Shown in bull-board, with their failed set (the dead-letter queue). */
  queues: Readonly<Record<ItemKind, Queue>>;
  enqueueDeps: EnqueueDeps;
  readiness: () => Promise<ReadinessState>;
  /** What the `/ui` overview needs beyond the enqueue deps. */
  overview: Pick<
    OverviewSources,
    'authGate' | 'ratePerMinute' | 'maxQueued' | 'spoolId' | 'inboxCounts' | 'spoolDisk' | 'redisWritesRefused' | 'lang' | 'topology' | 'traceUrl'
  >;
  logger: Logger;
  /** Run just before listening: the waiting server (waiting-server.ts) hands the port over. */
  beforeListen?: () => Promise<void>;
}

export interface OpsServer {
  url: string;
  port: number;
  setDraining(isDraining: boolean): void;
  /** `/healthz` answers 503 with this reason from now on (the watchdog: a stall not recovered, the process exits next). */
  setUnhealthy(reason: string): void;
  /** Idempotent. */
  close(): Promise<void>;
}

export const UI_BASE_PATH = '/ui';
export const INGEST_PATH = '/events';

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { logger } = options;
  const state: { isDraining: boolean; unhealthy: string | null } = { isDraining: false, unhealthy: null };
  const app = Fastify({ logger: false, return503OnClosing: true, schemaController: { compilersFactory: compilersOnFirstSchema() } });
  registerErrorReplies(app, options);
  registerExposureGuard(app, {
    host: options.host,
    uiBasePath: UI_BASE_PATH,
    ingestPath: INGEST_PATH,
    isUiPasswordSet: options.uiPassword !== null,
    isIngestTokenSet: options.ingestToken !== null,
    logger,
  });
  registerProbes(
    app,
    options,
    () => state.isDraining,
    () => state.unhealthy,
  );
  await registerDashboard(
    app,
    dashboardOptions(options, () => state.isDraining),
  );
  registerIngest(app, {
    ingestToken: options.ingestToken,
    maxIngestBytes: options.maxIngestBytes,
    enqueueDeps: options.enqueueDeps,
    isDraining: () => state.isDraining,
    logger,
  });

  try {
    await options.beforeListen?.();
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await app.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const url = `http://${reachableHost(options.host)}:${port}`;
  // `url` is where this host reaches it (loopback for a wildcard address); `boundTo` what it listens on:
  // on 0.0.0.0 the line said only 127.0.0.1, and a person read it as closed to the network.
  const boundTo = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  logger.info({ url, boundTo, isUiProtected: options.uiPassword !== null, isIngestProtected: options.ingestToken !== null }, 'ops server listening');
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    setDraining(next) {
      state.isDraining = next;
    },
    setUnhealthy(reason) {
      state.unhealthy = reason;
    },
    close() {
      closing ??= app.close().then(() => logger.debug('ops server closed'));
      return closing;
    },
  };
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type Builder = (...args: unknown[]) => unknown;

/**
 * Fastify's own schema compilers (Ajv and fast-json-stringify, ~100 modules), loaded the first time
 * a route with a schema needs them; Fastify otherwise loads them when the app is made. No ops route
 * has a schema, so a running daemon never loads them (issue 29: ~2 MB of its idle memory). They are
 * the ones Fastify would use, found from Fastify's own folder, each made once as Fastify does.
 */
function compilersOnFirstSchema(): CompilersFactory {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const onFirstUse = (name: string): Builder => {
    let build: Builder | undefined;
    return (...args) => (build ??= (fromFastify(name) as () => Builder)())(...args);
  };
  return {
    buildValidator: onFirstUse('@fastify/ajv-compiler'),
    buildSerializer: onFirstUse('@fastify/fast-json-stringify-compiler'),
  } as CompilersFactory;
}

/** A 5xx is logged and answered without its details; anything else says what was wrong. */
function registerErrorReplies(app: FastifyInstance, options: OpsServerOptions): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) {
      options.logger.error({ err: error, method: request.method, url: request.routeOptions.url }, 'ops request failed');
      return reply.code(status).send({ message: 'internal error; see the carrier-sync log' });
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.code(413).send({ message: tooLargeMessage(options.maxIngestBytes) });
    return reply.code(status).send({ message: error.message });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ message: `no route ${request.method} ${request.url.split('?')[0] ?? ''}` }));
}

/** `/healthz`, `/readyz` and `/metrics`: open, for probes and scrapers. */
function registerProbes(app: FastifyInstance, options: OpsServerOptions, isDraining: () => boolean, unhealthy: () => string | null): void {
  app.get('/healthz', async (_request, reply) => {
    const reason = unhealthy();
    if (reason !== null) return reply.code(503).send({ status: 'unhealthy', reason, version: appVersion() });
    return { status: 'ok', version: appVersion() };
  });
  app.get('/readyz', async (_request, reply) => {
    const state = isDraining() ? { isReady: false, reason: 'draining: the process is shutting down' } : await options.readiness();
    const spool = state.spool === undefined ? {} : { spool: state.spool };
    if (state.isReady) return { status: 'ready', ...spool };
    return reply.code(503).send({ status: 'unready', reason: state.reason ?? 'not ready', ...spool });
  });
  app.get('/metrics', async (_request, reply) => {
    const { registry } = options.metrics;
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}

function dashboardOptions(options: OpsServerOptions, isDraining: () => boolean): Parameters<typeof registerDashboard>[1] {
  const { redis, keys, queues, dedup, clock } = options.enqueueDeps;
  return {
    basePath: UI_BASE_PATH,
    queues: options.queues,
    uiPassword: options.uiPassword,
    overview: {
      ...options.overview,
      redis,
      keys,
      queues,
      dedup,
      clock,
      attempts: createAttemptLog(redis, keys),
      isDraining,
      ...(options.enqueueDeps.historyTtlSec === undefined ? {} : { historyTtlSec: options.enqueueDeps.historyTtlSec }),
    },
    logger: options.logger,
  };
}
