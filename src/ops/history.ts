/**
 * The journey routes, registered inside the `/ui` scope (the UI's authentication covers them):
 *   GET /ui/history?q=<delivery id or file name>   a file name (it has an extension) lists the
 *       journeys of the files with that name; anything else opens the delivery's timeline
 *   GET /ui/history/<delivery id>                  the timeline page, opening with each item's current state
 *   GET /ui/history/<delivery id>.json             the same steps as JSON ({deliveryId, steps})
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { langOfAcceptLanguage, type Lang } from '../i18n/translate.js';
import { findByFile, readJourney } from '../journey/journey-read.js';
import { readEventsFileRecords } from '../journey/events-file-lines.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { renderHistoryPage } from './history-page.js';
import { deadLettersOf, itemStates, withDeadLetterIds } from './item-states.js';
import type { QueueSet } from '../queue/queues.js';

export interface HistoryRouteOptions {
  basePath: string;
  redis: RedisConnection;
  keys: Keys;
  retentionDays: number;
  now(): number;
  /** CARRIER_SYNC_LANG, when the browser's Accept-Language names no language we speak. */
  lang: Lang;
  /** The item queues: a dead letter's job id for its replay button. */
  queues: QueueSet;
  /** CARRIER_SYNC_TRACE_URL: an attempt's trace id becomes a link through it. */
  traceUrl: string | null;
}

/** A query that names a file rather than a delivery: it ends in one of the spool's extensions. */
const FILE_NAME = /\.(pdf|xml|ndjson|jsonl|csv)$/i;

export function registerHistory(scope: FastifyInstance, options: HistoryRouteOptions): void {
  const { basePath: base, redis, keys, retentionDays, traceUrl } = options;
  const html = (body: string) => ({ type: 'text/html; charset=utf-8', body });

  const langOf = (request: FastifyRequest): Lang => langOfAcceptLanguage(request.headers['accept-language'], options.lang);

  scope.get<{ Querystring: { q?: string } }>('/history', async (request, reply) => {
    const query = (request.query.q ?? '').trim();
    if (query === '') return reply.redirect(base);
    if (!FILE_NAME.test(query)) return reply.redirect(`${base}/history/${encodeURIComponent(query)}`);
    const [steps, { invalidLines, refusals }] = await Promise.all([
      findByFile(redis, keys, [query], retentionDays, options.now()),
      readEventsFileRecords(redis, keys, query, retentionDays, options.now()),
    ]);
    const page = html(
      renderHistoryPage(
        { lookup: { by: 'file', name: query }, query, steps, retentionDays, jsonHref: null, invalidLines, fileRefusals: refusals, traceUrl },
        base,
        langOf(request),
      ),
    );
    return reply.type(page.type).header('cache-control', 'no-store').send(page.body);
  });

  scope.get<{ Params: { id: string } }>('/history/:id', async (request, reply) => {
    const isJson = request.params.id.endsWith('.json');
    const deliveryId = isJson ? request.params.id.slice(0, -'.json'.length) : request.params.id;
    const steps = await readJourney(redis, keys, deliveryId, { retentionDays, nowMs: options.now() });
    reply.header('cache-control', 'no-store');
    if (isJson) return { deliveryId, retentionDays, steps };
    const jsonHref = `${base}/history/${encodeURIComponent(deliveryId)}.json`;
    const states = itemStates(steps);
    // The failed set is read only when the journey says a dead letter is there.
    const current = states.some((s) => s.state === 'dead-lettered')
      ? withDeadLetterIds(states, await deadLettersOf(redis, options.queues, deliveryId))
      : states;
    const page = html(
      renderHistoryPage(
        { lookup: { by: 'delivery', name: deliveryId }, query: deliveryId, steps, retentionDays, jsonHref, current, traceUrl },
        base,
        langOf(request),
      ),
    );
    return reply.type(page.type).send(page.body);
  });
}
