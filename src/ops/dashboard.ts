/**
 * `/ui`: the overview page (`overview.ts`) and, under `/ui/queues`, the bull-board dashboard over
 * the item queues. The dead-letter queue is each item queue's Failed tab (failed jobs are kept
 * until `dlq purge`), so retry and clean in bull-board act on dead-lettered items directly through
 * BullMQ. Everything under `/ui` is one scope behind HTTP basic auth (user `admin`) when a password
 * is configured: pages, assets, JSON and the replay route sit behind the same check.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import fastifyBasicAuth from '@fastify/basic-auth';
import type { Queue } from 'bullmq';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { ITEM_KINDS, type ItemKind } from '../store/keys.js';
import type { Logger } from '../log.js';
import { registerHistory, type HistoryRouteOptions } from './history.js';
import { registerOverview } from './overview.js';
import type { OverviewSources } from './overview-data.js';
import { isSameCredentials } from './secrets.js';

export const UI_USER = 'admin';

export interface DashboardOptions {
  /** Where the dashboard is mounted, e.g. `/ui`. */
  basePath: string;
  queues: Readonly<Record<ItemKind, Queue>>;
  uiPassword: string | null;
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
            if (!isSameCredentials({ user, password }, { user: UI_USER, password: uiPassword })) {
              throw new Error('wrong user or password');
            }
          },
        });
        scope.addHook('onRequest', scope.basicAuth as onRequestHookHandler);
      }
      registerOverview(scope, { basePath, sources: options.overview, logger: options.logger });
      registerHistory(scope, historyRouteOptions(basePath, options.overview));
      const serverAdapter = new FastifyAdapter();
      serverAdapter.setBasePath(`${basePath}${QUEUES_PATH}`);
      createBullBoard({
        queues: ITEM_KINDS.map((kind) => new BullMQAdapter(options.queues[kind], { description: DESCRIPTIONS[kind] })),
        serverAdapter,
        options: { uiConfig: { boardTitle: 'carrier-sync', hideDocsLink: true, miscLinks: [{ text: 'Overview', url: basePath }] } },
      });
      await scope.register(serverAdapter.registerPlugin(), { prefix: QUEUES_PATH });
    },
    { prefix: basePath },
  );
}

function historyRouteOptions(basePath: string, sources: OverviewSources): HistoryRouteOptions {
  const retentionDays = sources.historyTtlSec === undefined ? 30 : Math.round(sources.historyTtlSec / 86_400);
  return { basePath, redis: sources.redis, keys: sources.keys, retentionDays, now: () => sources.clock.now(), lang: sources.lang ?? 'en' };
}
