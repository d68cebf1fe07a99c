/**
 * Fail closed beyond loopback. When the ops server is bound to anything other than a loopback
 * address (the Docker image binds 0.0.0.0), everyone who can reach the port could otherwise retry,
 * clean and obliterate queues in `/ui`, and send collecting events to the real API under the
 * carrier's key through `POST /events`. So there, each needs its credential configured; without it,
 * it answers 403 with a body naming the variable to set. `/healthz`, `/readyz` and `/metrics` hold
 * no secret and act on nothing: they stay open for probes and scrapers. On loopback nothing changes:
 * only this machine can connect.
 *
 * One root-level onRequest hook covers everything under the UI prefix (the dashboard, its assets and
 * API, whatever is mounted there later), routed or not, before any route's own hooks run.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../log.js';

export const UI_PASSWORD_VARIABLE = 'CARRIER_SYNC_UI_PASSWORD';
export const INGEST_TOKEN_VARIABLE = 'CARRIER_SYNC_INGEST_TOKEN';

export interface ExposureOptions {
  host: string;
  /** Where the UI is mounted, e.g. `/ui`. */
  uiBasePath: string;
  /** The ingest route, e.g. `/events`. */
  ingestPath: string;
  isUiPasswordSet: boolean;
  isIngestTokenSet: boolean;
  logger: Logger;
}

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || bare.startsWith('127.') || bare.startsWith('::ffff:127.');
}

/** Registers the guard on the root instance; call it before the UI and ingest routes. */
export function registerExposureGuard(app: FastifyInstance, options: ExposureOptions): void {
  if (isLoopbackHost(options.host)) return;
  const closed: Array<{ what: string; variable: string; matches: (path: string) => boolean }> = [];
  if (!options.isUiPasswordSet) closed.push({ what: options.uiBasePath, variable: UI_PASSWORD_VARIABLE, matches: (path) => isUnder(path, options.uiBasePath) });
  if (!options.isIngestTokenSet)
    closed.push({ what: `POST ${options.ingestPath}`, variable: INGEST_TOKEN_VARIABLE, matches: (path) => path === options.ingestPath });
  if (closed.length === 0) return;
  for (const { what, variable } of closed) {
    options.logger.warn({ host: options.host, closed: what, set: variable }, 'ops server bound beyond loopback: answering 403 until the credential is set');
  }
  app.addHook('onRequest', async (request, reply) => {
    // The route's pattern and the decoded path both count, so no spelling of a URL slips past.
    const paths = [request.routeOptions.url, decodedPathOf(request.url)].filter((path): path is string => path !== undefined);
    const rule = closed.find((candidate) => paths.some(candidate.matches));
    if (rule === undefined) return undefined;
    return reply.code(403).send({
      message: `${rule.what} is closed: the ops server listens on ${options.host}, beyond loopback, and ${rule.variable} is not set. Set ${rule.variable} (or ${rule.variable}_FILE), or bind to 127.0.0.1.`,
      variable: rule.variable,
    });
  });
}

function isUnder(path: string, base: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

function decodedPathOf(url: string): string {
  const path = url.split('?')[0] ?? '';
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    decoded = path;
  }
  // Repeated slashes fold into one, as a lenient router would.
  return decoded.replace(/\/{2,}/g, '/');
}
