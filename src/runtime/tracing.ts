/**
 * Tracing's start and end (docs/tracing.md). On only when an OTLP endpoint is set
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT) and OTEL_SDK_DISABLED is not
 * true: without one, the SDK and its exporters are never imported (the spans of src/trace.ts stay
 * the API's no-ops) and an idle daemon's memory and CPU are what they were.
 *
 * Spans are made by src/trace.ts, through the API; the context is handed on explicitly across
 * awaits (synchronousContext below), so no AsyncLocalStorage runs.
 *
 * The standard OTEL_* variables are read by the SDK's own parts, as their docs say: the exporters
 * (endpoint, OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION), the provider (OTEL_TRACES_SAMPLER,
 * _ARG, span limits), the batch processor (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES). This file picks the protocol (http/protobuf, the default, or
 * http/json) and names the service carrier-sync unless OTEL_SERVICE_NAME says otherwise.
 *
 * An exporter that is down or slow never holds up the work: spans wait in a bounded queue
 * (OTEL_BSP_MAX_QUEUE_SIZE, default 2048) and the batch processor sends one batch at a time; a
 * span that finds the queue full is dropped and counted, as are the spans of a batch the exporter
 * failed to send (`carrier_sync_trace_spans_dropped_total{reason}`).
 */
import type * as OtelApi from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log.js';
import { markTracingOn } from '../trace.js';
import { appVersion } from '../version.js';

export interface SpansDropped {
  /** Spans that found the export queue full. */
  queueFull: number;
  /** Spans of batches the exporter could not deliver (after its own retries). */
  exportFailed: number;
}

export interface Tracing {
  dropped(): SpansDropped;
  /** Sends what is queued (at most `boundMs`) and stops; never throws. */
  shutdown(boundMs?: number): Promise<void>;
}

const DEFAULT_MAX_QUEUE = 2048;
const DEFAULT_BATCH = 512;
const SHUTDOWN_BOUND_MS = 3_000;
/** A repeated message of the SDK's (an exporter that is down says so every batch) is logged once a minute. */
const DIAG_QUIET_MS = 60_000;

type Env = Readonly<Record<string, string | undefined>>;

/** Whether the environment turns tracing on: an endpoint set, the SDK not disabled, the exporter not `none`. */
export function isTracingOn(env: Env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '';
  return endpoint.trim() !== '' && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true' && env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
}

/** Starts tracing when the environment asks for it; null otherwise (nothing loaded). */
export async function startTracing(env: Env, logger: Logger): Promise<Tracing | null> {
  if (!isTracingOn(env)) return null;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    logger.warn({ protocol }, 'tracing off: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported)');
    return null;
  }
  const api = await import('@opentelemetry/api');
  const [{ BasicTracerProvider, BatchSpanProcessor }, { W3CTraceContextPropagator }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const { OTLPTraceExporter } =
    protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');

  forwardDiagnostics(api, logger.child({ mod: 'otel' }));
  const dropped: SpansDropped = { queueFull: 0, exportFailed: 0 };
  const maxQueueSize = positiveInt(env.OTEL_BSP_MAX_QUEUE_SIZE) ?? DEFAULT_MAX_QUEUE;
  const exporter = countingExporter(new OTLPTraceExporter(), dropped);
  // A batch is at most the queue (the SDK's default batch, 512, would exceed a smaller queue).
  const maxExportBatchSize = Math.min(positiveInt(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) ?? DEFAULT_BATCH, maxQueueSize);
  const batch = new BatchSpanProcessor(exporter.exporter, { maxQueueSize, maxExportBatchSize });
  const resource = resources
    .resourceFromAttributes({ 'service.name': 'carrier-sync', 'service.version': appVersion() })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [boundedQueue(batch, maxQueueSize, exporter.handed, dropped)] });

  api.context.setGlobalContextManager(synchronousContext(api.ROOT_CONTEXT));
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  markTracingOn();
  logger.info({ protocol, maxQueueSize, serviceName: resource.attributes['service.name'] }, 'tracing on: spans go to the OTLP endpoint');

  let stopping: Promise<void> | undefined;
  return {
    dropped: () => ({ ...dropped }),
    shutdown(boundMs = SHUTDOWN_BOUND_MS) {
      stopping ??= Promise.race([provider.shutdown(), new Promise<void>((resolve) => setTimeout(resolve, boundMs).unref())]).catch((error: unknown) => {
        logger.warn({ err: error }, 'tracing: the last spans could not be sent');
      });
      return stopping;
    },
  };
}

/**
 * The active context during a call's synchronous part only, as a stack (OpenTelemetry's own
 * StackContextManager, which the browser SDK uses). Not AsyncLocalStorage: on Node 20 that
 * installs a promise hook run for every promise of the process, ~3 % of the daemon's CPU on the mixed
 * drop for nothing (the profile in BENCHMARKS.md, issue 38). Our spans hand their context on
 * explicitly where an await comes between (src/trace.ts: withSpan, bindSpan, loggerIn).
 */
function synchronousContext(root: Context): OtelApi.ContextManager {
  let current = root;
  return {
    active: () => current,
    with(next, work, thisArg, ...args) {
      const before = current;
      current = next;
      try {
        return work.call(thisArg, ...args);
      } finally {
        current = before;
      }
    },
    bind: (_context, target) => target,
    enable() {
      return this;
    },
    disable() {
      current = root;
      return this;
    },
  };
}

/** The exporter, counting the spans handed to it and those of batches it failed to deliver. */
function countingExporter(inner: SpanExporter, dropped: SpansDropped): { exporter: SpanExporter; handed: () => number } {
  let handed = 0;
  const exporter: SpanExporter = {
    export(spans, done) {
      handed += spans.length;
      inner.export(spans, (result) => {
        if (result.code !== 0) dropped.exportFailed += spans.length;
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    ...(inner.forceFlush === undefined ? {} : { forceFlush: () => inner.forceFlush?.() ?? Promise.resolve() }),
  };
  return { exporter, handed: () => handed };
}

/**
 * In front of the batch processor: a sampled span that would find its queue full (spans ended and
 * not yet handed to the exporter) is dropped here and counted; the batch processor's own limit is
 * the same, so it never drops one uncounted.
 */
function boundedQueue(inner: SpanProcessor, maxQueueSize: number, handed: () => number, dropped: SpansDropped): SpanProcessor {
  let forwarded = 0;
  return {
    onStart: (span: Span, parent: Context) => inner.onStart(span, parent),
    onEnd(span: ReadableSpan) {
      if ((span.spanContext().traceFlags & 1) === 0) return;
      if (forwarded - handed() >= maxQueueSize) {
        dropped.queueFull += 1;
        return;
      }
      forwarded += 1;
      inner.onEnd(span);
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
  };
}

/** The SDK's own warnings and errors as log lines (an exporter that is down: once a minute, not every batch). */
function forwardDiagnostics(api: typeof OtelApi, logger: Logger): void {
  const lastAt = new Map<string, number>();
  const say = (message: string, ...args: unknown[]): void => {
    const now = Date.now();
    if (now - (lastAt.get(message) ?? -Infinity) < DIAG_QUIET_MS) return;
    lastAt.set(message, now);
    logger.warn({ detail: args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(' ') }, `tracing: ${message}`);
  };
  const quiet = (): void => {};
  api.diag.setLogger({ error: say, warn: say, info: quiet, debug: quiet, verbose: quiet }, api.DiagLogLevel.WARN);
}

function positiveInt(value: string | undefined): number | undefined {
  const number = Number(value);
  return value !== undefined && Number.isInteger(number) && number > 0 ? number : undefined;
}
