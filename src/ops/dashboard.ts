/**
 * `/ui`: the overview page (`overview.ts`) and, under `/ui/queues`, the bull-board dashboard over
 * the item queues. The dead-letter queue is each item queue's Failed tab (failed jobs are kept
 * until `dlq purge`), so retry and clean in bull-board act on dead-lettered items directly through
 * BullMQ. Everything under `/ui` is one scope behind HTTP basic auth (user `admin`) when a password
 * is configured: pages, assets, JSON and the replay route sit behind the same check.
 *
 * bull-board loads at the first request under `/ui/queues`, not at start (issue 29: with lodash,
 * valibot, ejs and BullMQ's whole index it is ~6 MB of an idle daemon's memory, in every process
 * with the http role, whether anyone opens it or not). It runs in a Fastify instance of its own
 * that never listens; the `/ui/queues` routes here hand it each request (`inject`) once this
 * scope's hooks (authentication, exposure guard) have let the request through, and send back its
 * answer as it gave it.
 */
import fastifyBasicAuth from '@fastify/basic-auth';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import { ITEM_KINDS, type ItemKind } from '../store/keys.js';
import type { Logger } from '../log.js';
import { registerHistory, type HistoryRouteOptions } from './history.js';
import { registerOverview } from './overview.js';
import type { OverviewSources } from './overview-data.js';
import { isSameCredentials, secretNow, type SecretSource } from './secrets.js';

export const UI_USER = 'admin';

export interface DashboardOptions {
  /** Where the dashboard is mounted, e.g. `/ui`. */
  basePath: string;
  queues: Readonly<Record<ItemKind, Queue>>;
  uiPassword: SecretSource | null;
  overview: OverviewSources;
  logger: Logger;
}

/** bull-board's place under the UI prefix. */
export const QUEUES_PATH = '/queues';

const DESCRIPTIONS: Readonly<Record<ItemKind, string>> = {
  label: 'Label PDFs → POST /v1/delivery/mail-label. Failed = dead-lettered (kept until purge).',
  cte: 'CT-e XMLs → PUT /v1/delivery/cte. Failed = dead-lettered (kept until purge).',
  collecting: 'Driver collecting events → POST /v1/delivery/collecting. Failed = dead-lettered (kept until purge).',
};

export async function registerDashboard(app: FastifyInstance, options: DashboardOptions): Promise<void> {
  const { basePath, uiPassword } = options;
  await app.register(
    async (scope) => {
      if (uiPassword !== null) {
        await scope.register(fastifyBasicAuth, {
          authenticate: { realm: 'carrier-sync' },
          validate: async (user, password) => {
            if (!isSameCredentials({ user, password }, { user: UI_USER, password: secretNow(uiPassword) })) {
              throw new Error('wrong user or password');
            }
          },
        });
        scope.addHook('onRequest', scope.basicAuth as onRequestHookHandler);
      }
      registerOverview(scope, { basePath, sources: options.overview, logger: options.logger });
      registerHistory(scope, historyRouteOptions(basePath, options.overview));
      registerQueuesBoard(scope, options);
    },
    { prefix: basePath },
  );
}

/** Headers of the board's answer that belong to its own (injected) connection, not to the reply. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);
/** Marks the board's "no such route": the request then gets the ops server's own 404, as before. */
const NOT_BOARD_ROUTE = 'x-carrier-sync-not-board-route';

function registerQueuesBoard(scope: FastifyInstance, options: DashboardOptions): void {
  let board: Promise<FastifyInstance> | undefined;
  const boardApp = (): Promise<FastifyInstance> => {
    board ??= startBoard(options).catch((error: unknown) => {
      board = undefined;
      throw error;
    });
    return board;
  };
  const handOver = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const app = await boardApp();
    const headers = { ...request.headers };
    delete headers['content-length'];
    const answer = await app.inject({
      method: request.method as 'GET',
      url: request.url,
      headers,
      ...(request.body === undefined ? {} : { payload: typeof request.body === 'string' ? request.body : JSON.stringify(request.body) }),
    });
    if (answer.headers[NOT_BOARD_ROUTE] !== undefined) {
      reply.callNotFound();
      return reply;
    }
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !CONNECTION_HEADERS.has(name)) reply.header(name, value);
    }
    return reply.send(answer.rawPayload);
  };
  scope.all(QUEUES_PATH, handOver);
  scope.all(`${QUEUES_PATH}/*`, handOver);
  scope.addHook('onClose', async () => {
    const started = board;
    board = undefined;
    if (started !== undefined) await (await started.catch(() => null))?.close();
  });
}

/** bull-board over the item queues, in its own Fastify instance at the same paths. */
async function startBoard(options: DashboardOptions): Promise<FastifyInstance> {
  const [{ createBullBoard }, { BullMQAdapter }, { FastifyAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/fastify'),
  ]);
  const app = Fastify({ logger: false });
  app.setNotFoundHandler((_request, reply) => reply.code(404).header(NOT_BOARD_ROUTE, '1').send());
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(`${options.basePath}${QUEUES_PATH}`);
  createBullBoard({
    queues: ITEM_KINDS.map((kind) => new BullMQAdapter(options.queues[kind], { description: DESCRIPTIONS[kind] })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'carrier-sync', hideDocsLink: true, miscLinks: [{ text: 'Overview', url: options.basePath }] } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: `${options.basePath}${QUEUES_PATH}` });
  await app.ready();
  return app;
}

function historyRouteOptions(basePath: string, sources: OverviewSources): HistoryRouteOptions {
  const retentionDays = sources.historyTtlSec === undefined ? 30 : Math.round(sources.historyTtlSec / 86_400);
  return {
    basePath,
    redis: sources.redis,
    keys: sources.keys,
    retentionDays,
    now: () => sources.clock.now(),
    lang: sources.lang ?? 'en',
    queues: sources.queues,
    traceUrl: sources.traceUrl ?? null,
  };
}
