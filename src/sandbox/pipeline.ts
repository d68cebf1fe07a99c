import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { KeyRing } from './auth.js';
import { endpointOf, isControlRequest } from './endpoints.js';
import { fail, shapeE } from './error-bodies.js';
import { delayOf, isActiveUntil, type SandboxFaults } from './faults.js';
import type { SlidingWindowLimiter } from './rate-limit.js';
import type { PendingRequest, RequestLog, SandboxRequest } from './request-log.js';

/**
 * What happens to every API request before its handler, in this order:
 *   reset fault → latency → 503 fault → 401 window → key (401) → storm (429) → rate limit (429)
 * then fastify parses the body and the handler validates it and applies the business rules.
 * Control routes (/_sandbox/...) skip all of it and are not logged.
 */

export interface PipelineDeps {
  log: RequestLog;
  keyRing: KeyRing;
  limiter: SlidingWindowLimiter;
  faults: () => SandboxFaults;
  now: () => number;
  random: () => number;
  logger: Logger | undefined;
}

export type RequestNote = Partial<Pick<SandboxRequest, 'deliveryId' | 'eventAt' | 'isRepeat' | 'labelSha256'>>;

export interface Pipeline {
  /** Id of the carrier or seller group that the pipeline authenticated for this request. */
  callerId(request: FastifyRequest): string;
  /** Adds details to the request's log entry. */
  note(request: FastifyRequest, note: RequestNote): void;
}

const TOO_MANY = shapeE('Too Many Requests');

export function installPipeline(app: FastifyInstance, deps: PipelineDeps): Pipeline {
  const pending = new WeakMap<FastifyRequest, PendingRequest>();
  const finish = (request: FastifyRequest, status: number): void => {
    const entry = pending.get(request);
    if (entry === undefined) return;
    pending.delete(request);
    const recorded = deps.log.record(entry, status, deps.now());
    deps.logger?.debug({ ...recorded }, 'sandbox request');
  };

  app.addHook('onRequest', async (request, reply) => admit(deps, pending, finish, request, reply));

  app.addHook('onResponse', async (request, reply) => finish(request, reply.statusCode));

  // Counts the bytes actually received, then parses as fastify does by default.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    const entry = pending.get(request);
    if (entry !== undefined) entry.bodyBytes = body.length;
    void parseJson(request, body.toString('utf8'), done);
  });

  app.setErrorHandler((error: { statusCode?: number; message: string }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    const spec = endpointOf(request);
    if (status >= 500) deps.logger?.error({ err: error, path: request.url }, 'sandbox handler failed');
    if (spec === undefined) return reply.code(status).send(shapeE(error.message));
    return fail(reply, spec.shape, status, GENERIC_CODES[status] ?? 'INVALID_REQUEST', error.message);
  });

  app.setNotFoundHandler((request, reply) => reply.code(404).send(shapeE(`Route ${request.method}:${request.url} not found`)));

  return {
    callerId(request) {
      const keyId = pending.get(request)?.keyId;
      if (keyId === undefined || keyId === null) throw new Error('sandbox: handler ran without an authenticated caller');
      return keyId;
    },
    note(request, note) {
      const entry = pending.get(request);
      if (entry !== undefined) Object.assign(entry, note);
    },
  };
}

/**
 * The steps before a handler (see the file header): a request that a fault, the key or the limit
 * stops is answered here; one that passes goes on to fastify's body parsing and its handler.
 */
async function admit(
  deps: PipelineDeps,
  pending: WeakMap<FastifyRequest, PendingRequest>,
  finish: (request: FastifyRequest, status: number) => void,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  if (isControlRequest(request)) return;
  const spec = endpointOf(request);
  const declared = Number(request.headers['content-length']);
  const entry: PendingRequest = {
    at: deps.now(),
    method: request.method,
    path: request.url.split('?')[0] ?? request.url,
    endpoint: spec?.name ?? 'unknown',
    keyId: null,
    bodyBytes: Number.isFinite(declared) ? declared : 0,
  };
  const traceparent = request.headers.traceparent;
  if (typeof traceparent === 'string') entry.traceparent = traceparent;
  pending.set(request, entry);
  const faults = deps.faults();
  if (faults.resetRate > 0 && deps.random() < faults.resetRate) {
    entry.fault = 'reset';
    reply.hijack();
    request.raw.socket.destroy();
    finish(request, 0);
    return;
  }
  const delayMs = delayOf(faults, deps.random);
  if (delayMs > 0) await sleep(delayMs, undefined, { ref: false });
  if (faults.errorRate > 0 && deps.random() < faults.errorRate) {
    entry.fault = 'error';
    return reply.code(503).send(shapeE('Service Unavailable'));
  }
  if (isActiveUntil(faults.unauthorizedUntil, deps.now())) {
    entry.fault = 'unauthorized';
    return reply.code(401).send(shapeE('Unauthorized'));
  }
  if (spec === undefined) return;
  const keyId = deps.keyRing.identify(spec.key, request.headers);
  if (keyId === null) return reply.code(401).send(shapeE('Unauthorized'));
  entry.keyId = keyId;
  if (isActiveUntil(faults.rateLimitStormUntil, deps.now())) {
    entry.fault = 'storm';
    return tooMany(reply, faults.stormRetryAfterSec);
  }
  const decision = deps.limiter.take(keyId, deps.now());
  if (!decision.isAllowed) {
    entry.fault = 'rate-limited';
    return tooMany(reply, decision.retryAfterSec);
  }
  return undefined;
}

const GENERIC_CODES: Readonly<Record<number, string>> = {
  400: 'INVALID_BODY',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  500: 'INTERNAL_ERROR',
};

function tooMany(reply: FastifyReply, retryAfterSec: number): FastifyReply {
  return reply.code(429).header('retry-after', String(retryAfterSec)).send(TOO_MANY);
}
