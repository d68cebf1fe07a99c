/**
 * The `/ui` overview routes, registered inside the `/ui` scope (so the UI's authentication covers
 * each of them):
 *   GET  /ui                      the page
 *   GET  /ui/overview.json        the same numbers as JSON
 *   GET  /ui/overview/parts       fresh HTML parts plus the JSON, for the page's refresh
 *   GET  /ui/assets/*             uPlot (from node_modules), the stylesheet and the script
 *   POST /ui/dead-letters/replay  {id} or {code}: puts dead letters back to work
 * A replay changes state, so it must come from the page itself: it needs the REPLAY_HEADER header
 * (a cross-site form cannot send one, and a cross-site fetch with it needs a CORS preflight we never
 * grant) and, when the browser names an Origin, that origin must be this server.
 */
import { HISTORY_JS } from './history-page.js';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../log.js';
import { retryDeadLetters } from '../queue/dead-letter.js';
import { langOfAcceptLanguage, type Lang } from '../i18n/translate.js';
import { LOCAL_TIME_JS } from './local-time.js';
import { OVERVIEW_CSS, OVERVIEW_JS, REPLAY_HEADER } from './overview-assets.js';
import { deadLetterIdsWithCode, readOverview, type OverviewSources } from './overview-data.js';
import { renderPage, renderParts } from './overview-page.js';

export interface OverviewOptions {
  /** The `/ui` prefix, for the links the page prints. */
  basePath: string;
  sources: OverviewSources;
  logger: Logger;
}

const UPLOT_DIR = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');

export function registerOverview(scope: FastifyInstance, options: OverviewOptions): void {
  const { basePath: base, sources, logger } = options;
  const assets: Record<string, { type: string; body: string | Buffer }> = {
    'uPlot.iife.min.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(UPLOT_DIR, 'uPlot.iife.min.js')) },
    'uPlot.min.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(UPLOT_DIR, 'uPlot.min.css')) },
    'overview.css': { type: 'text/css; charset=utf-8', body: OVERVIEW_CSS },
    'overview.js': { type: 'text/javascript; charset=utf-8', body: OVERVIEW_JS },
    'local-time.js': { type: 'text/javascript; charset=utf-8', body: LOCAL_TIME_JS },
    'history.js': { type: 'text/javascript; charset=utf-8', body: HISTORY_JS },
  };

  // The browser's Accept-Language first, then CARRIER_SYNC_LANG; the JSON stays as it is.
  const langOf = (request: FastifyRequest): Lang => langOfAcceptLanguage(request.headers['accept-language'], sources.lang ?? 'en');
  scope.get('/', async (request, reply) => {
    const overview = await readOverview(sources);
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('vary', 'accept-language')
      .send(renderPage(overview, base, langOf(request)));
  });
  scope.get('/overview.json', async (_request, reply) => reply.header('cache-control', 'no-store').send(await readOverview(sources)));
  scope.get('/overview/parts', async (request, reply) => {
    const overview = await readOverview(sources);
    return reply.header('cache-control', 'no-store').send({ parts: renderParts(overview, base, langOf(request)), overview });
  });
  scope.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = assets[request.params.name];
    if (asset === undefined) return reply.code(404).send({ message: `no asset ${request.params.name}` });
    return reply.type(asset.type).header('cache-control', 'max-age=300').send(asset.body);
  });

  scope.post<{ Body: unknown }>('/dead-letters/replay', async (request, reply) => {
    const refusal = crossSiteRefusal(request);
    if (refusal !== null) return reply.code(403).send({ message: refusal });
    const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as { id?: unknown; code?: unknown };
    const isId = typeof body.id === 'string' && body.id !== '';
    const isCode = typeof body.code === 'string' && body.code !== '';
    if (isId === isCode) return reply.code(400).send({ message: 'give either {"id": "<dead letter id>"} or {"code": "<error code>"}' });
    const ids = isId ? [body.id as string] : await deadLetterIdsWithCode(sources, body.code as string);
    const journal =
      sources.historyTtlSec === undefined ? undefined : { ...sources, historyTtlSec: sources.historyTtlSec, by: 'ui' as const, nowMs: sources.clock.now() };
    const { retried, missing } = await retryDeadLetters(sources, ids, journal);
    logger.info({ retried, missing, ...(isCode ? { code: body.code } : {}) }, 'dead letters replayed from the overview page');
    if (retried.length === 0)
      return reply
        .code(404)
        .send({ message: isId ? `${String(body.id)} is not a dead letter (any more)` : `no dead letter with code ${String(body.code)}`, retried, missing });
    return { retried, missing };
  });
}

/** Why a state-changing request does not look like it came from our own page, or null. */
function crossSiteRefusal(request: FastifyRequest): string | null {
  if (request.headers[REPLAY_HEADER] === undefined) return `a replay needs the ${REPLAY_HEADER} header (send it from the overview page)`;
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  try {
    if (new URL(origin).host === request.headers.host) return null;
  } catch {
    // An Origin that is not a URL ("null" from a sandboxed frame) is not our page.
  }
  return 'a replay must come from this server’s own page (Origin does not match)';
}
