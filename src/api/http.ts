/**
 * The one HTTP pool to the API: keep-alive connections, connect/headers/body timeouts, JSON in and
 * out, a timing sample per request. A 2xx comes back as text; anything else is thrown as a
 * SyncError (see errors.ts). undici never retries here: retrying is the queue's decision.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type { Dispatcher, Pool as UndiciPool } from 'undici';
import { systemClock, type Clock } from '../clock.js';
import { SyncError } from '../errors.js';
import { configRefusal } from '../config/refusal.js';
import { silentLogger, type Logger } from '../log.js';
import { inSpan, isTracingOn, markError, SpanKind, traceparentOf } from '../trace.js';
import { fromTransportError, toSyncError, unreadableSuccess } from './errors.js';
import type { EndpointName, ResponseSample, ResponseSampleStatus } from './types.js';

// The pool and its request() only, from undici's own files: its index loads all of undici (fetch,
// WebSocket, caches, mocks, proxies: ~110 modules, ~4 MB of an idle daemon's memory; issue 29).
// The index gives every dispatcher request() by copying this same function onto Dispatcher's
// prototype; here it is called on the pool. Pinned undici version: test/integration covers both.
const require = createRequire(import.meta.url);
const Pool = require('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
const requestOn = require('undici/lib/api/api-request.js') as (
  this: UndiciPool,
  options: Dispatcher.RequestOptions<null>,
) => Promise<Dispatcher.ResponseData<null>>;

/** Largest response body accepted, in bytes; the API's biggest answers are order lists. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** Idle keep-alive sockets are dropped after this many ms unless the server hints otherwise. */
const KEEP_ALIVE_MS = 10_000;

export interface HttpOptions {
  baseUrl: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  connections: number;
  logger?: Logger | undefined;
  onResponse?: ((sample: ResponseSample) => void) | undefined;
  clock?: Clock | undefined;
}

export interface HttpRequest {
  endpoint: EndpointName;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Path below the base URL, path parameters already encoded. */
  path: string;
  headers: Record<string, string>;
  /** Sent as JSON when present. */
  body?: unknown;
}

export interface HttpResponse {
  endpoint: EndpointName;
  status: number;
  text: string;
}

export interface Http {
  send(request: HttpRequest): Promise<HttpResponse>;
  close(): Promise<void>;
}

function parseBaseUrl(baseUrl: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch (error) {
    // The URL itself is left out of the message: it may carry credentials.
    throw configRefusal('config.error.apiUrlInvalid', {}, { cause: error });
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw configRefusal('config.error.apiUrlScheme', { protocol: base.protocol });
  }
  return base;
}

/** Where requests go, as the CLIENT span names it: the origin and base path (never a key), and the server. */
interface TraceTarget {
  origin: string;
  server: { 'server.address': string; 'server.port': number };
}

/** The request as a CLIENT span (HTTP semconv), its traceparent sent along; url.full has no userinfo or key. */
function tracedSend(send: (request: HttpRequest) => Promise<HttpResponse>, target: TraceTarget, request: HttpRequest): Promise<HttpResponse> {
  const attributes = {
    'http.request.method': request.method,
    'url.full': target.origin + request.path,
    ...target.server,
  };
  // An answer with a status is marked below (error.type: the status); a failure without one, by inSpan (error.type: its code).
  const isError = (error: unknown): boolean => !(error instanceof SyncError && error.status !== undefined);
  return inSpan(request.method, { kind: SpanKind.CLIENT, attributes, isError }, async (span) => {
    // The span's own traceparent, written directly (the propagator's inject would find the same span in the context).
    const headers: Record<string, string> = { ...request.headers };
    const traceparent = traceparentOf(span);
    if (traceparent !== undefined) headers['traceparent'] = traceparent;
    try {
      const response = await send({ ...request, headers });
      span.setAttribute('http.response.status_code', response.status);
      return response;
    } catch (error) {
      if (error instanceof SyncError && error.status !== undefined) {
        span.setAttribute('http.response.status_code', error.status);
        markError(span, error, String(error.status));
      }
      throw error;
    }
  });
}

export function createHttp(options: HttpOptions): Http {
  const base = parseBaseUrl(options.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections,
    connectTimeout: options.connectTimeoutMs,
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyTimeoutMs,
    keepAliveTimeout: KEEP_ALIVE_MS,
    maxResponseSize: MAX_RESPONSE_BYTES,
    connect: { keepAlive: true },
  });
  const logger = (options.logger ?? silentLogger).child({ mod: 'api' });
  const clock = options.clock ?? systemClock;
  let closing: Promise<void> | undefined;

  const report = (endpoint: EndpointName, status: ResponseSampleStatus, startedAt: number): void => {
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    logger.debug({ endpoint, status, durationMs }, 'api request');
    try {
      options.onResponse?.({ endpoint, status, durationMs });
    } catch (error) {
      // A broken metrics hook must not turn a delivered item into a failed one.
      logger.warn({ endpoint, err: error }, 'onResponse hook threw');
    }
  };

  const target: TraceTarget = {
    origin: base.origin + prefix,
    server: { 'server.address': base.hostname, 'server.port': Number(base.port || (base.protocol === 'https:' ? 443 : 80)) },
  };

  async function send(request: HttpRequest): Promise<HttpResponse> {
    const { endpoint } = request;
    if (closing !== undefined) throw new SyncError('NETWORK', `${endpoint}: API client is closed`);
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    const startedAt = performance.now();
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const response = await requestOn.call(pool, { path: prefix + request.path, method: request.method, headers, body: body ?? null });
      status = response.statusCode;
      retryAfter = response.headers['retry-after'];
      text = await response.body.text();
    } catch (error) {
      const syncError = fromTransportError(endpoint, error);
      report(endpoint, syncError.code === 'TIMEOUT' ? 'timeout' : 'network', startedAt);
      throw syncError;
    }
    report(endpoint, status, startedAt);
    if (status < 200 || status > 299) {
      throw toSyncError({ endpoint, status, body: text, retryAfter, nowMs: clock.now() });
    }
    return { endpoint, status, text };
  }

  return {
    send: (request) => (isTracingOn() ? tracedSend(send, target, request) : send(request)),
    close() {
      closing ??= closePool(pool);
      return closing;
    },
  };
}

/**
 * The JSON of a 2xx whose body the caller needs, checked by `isExpected`. A body that is not JSON
 * or not of the expected shape is the API's fault: API_UNAVAILABLE (retry), with the body kept.
 */
export function readJson<T>(response: HttpResponse, isExpected: (value: unknown) => value is T): T {
  let value: unknown;
  try {
    value = JSON.parse(response.text);
  } catch {
    throw unreadableSuccess(response.endpoint, response.status, response.text);
  }
  if (!isExpected(value)) throw unreadableSuccess(response.endpoint, response.status, response.text);
  return value;
}

/** One path segment: percent-encoded, and never `.` or `..` (which a server could resolve). */
export function encodePathParam(value: string): string {
  const encoded = encodeURIComponent(value);
  return encoded === '.' || encoded === '..' ? encoded.replaceAll('.', '%2E') : encoded;
}

/** A request still pending this long after the close began is given up. */
const CLOSE_WAIT_MS = 1000;

/**
 * Closes politely (requests under way finish), and gives up what is still pending after
 * CLOSE_WAIT_MS: the pool is closed after the workers, so a request still pending then belongs to a
 * job the shutdown left (an API that never answers); its item is sent again after the restart.
 */
async function closePool(pool: UndiciPool): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
  await Promise.race([pool.close(), waited]);
  clearTimeout(timer);
  if (!pool.destroyed) await pool.destroy();
}
