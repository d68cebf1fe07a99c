/**
 * The http role: the ops server (health, readiness, metrics, the /ui overview and bull-board,
 * POST /events). Its close goes on the shutdown stack; turning /readyz to 503 is the first
 * shutdown step, which start.ts runs before the stack.
 */
import type { Metrics } from '../../ops/metrics.js';
import type { ReadinessState } from '../../ops/readiness.js';
import type { OpsServer } from '../../ops/server.js';
import { spoolDisk } from '../../spool/disk-state.js';
import { movesRefused } from '../../outcome/consumer.js';
import { claimsRefused } from '../../spool/claims-refused.js';
import { readTopology } from '../../store/topology.js';
import { liveSecret } from '../../config/secret-file.js';
import type { Context } from '../context.js';
import { inboxCounter, spoolIdOf } from './inbox-counts.js';

export interface HttpRoleDeps {
  metrics: Metrics;
  readiness: () => Promise<ReadinessState>;
  /** The overview shows the spool disk's state only in a process that watches the spool. */
  hasWatcher: boolean;
  /** The port held by the waiting server, which it hands over just before the full server listens. */
  handover?: { port: number; close: () => Promise<void> };
}

export async function startHttpRole(ctx: Context, deps: HttpRoleDeps): Promise<OpsServer> {
  const { config, logger } = ctx;
  // Imported here: a process without the http role never loads fastify and bull-board.
  const { startOpsServer } = await import('../../ops/server.js');
  const server = await startOpsServer({
    host: config.http.host,
    port: deps.handover?.port ?? config.http.port,
    // Given as *_FILE, they follow their file (config/secret-file.ts): a rotated Secret without a restart.
    uiPassword: config.http.uiPassword === null ? null : liveSecret(process.env, 'CARRIER_SYNC_UI_PASSWORD', config.http.uiPassword),
    ingestToken: config.http.ingestToken === null ? null : liveSecret(process.env, 'CARRIER_SYNC_INGEST_TOKEN', config.http.ingestToken),
    maxIngestBytes: config.http.maxIngestBytes,
    metrics: deps.metrics,
    queues: ctx.queues.items,
    enqueueDeps: ctx.enqueueDeps,
    readiness: deps.readiness,
    overview: {
      authGate: ctx.authGate,
      ratePerMinute: config.delivery.ratePerMinute,
      maxQueued: config.delivery.maxQueued,
      lang: config.lang,
      traceUrl: config.history.traceUrl,
      spoolId: await spoolIdOf(config.spool),
      inboxCounts: inboxCounter(config.spool),
      topology: () => readTopology(ctx.redis, ctx.redisTarget, ctx.keys.topology, config.prefix),
      ...(deps.hasWatcher ? { spoolDisk, movesRefused, claimsRefused } : {}),
      redisWritesRefused: () => ctx.health.writesRefused(),
    },
    logger: logger.child({ mod: 'ops' }),
    ...(deps.handover === undefined ? {} : { beforeListen: deps.handover.close }),
  });
  ctx.closers.push('ops server', () => server.close());
  return server;
}
