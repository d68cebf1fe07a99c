/**
 * Spans of an item's trip, through the OpenTelemetry API only (a leaf like log.ts: anyone may use
 * it). Until runtime/tracing.ts registers the SDK — only when an OTLP endpoint is set — every call
 * here is the API's no-op: a non-recording span, no context kept, no header written.
 *
 * The shape of one item's trace (docs/tracing.md): three spans, whatever its source.
 *   publish <kind> (PRODUCER, the root: for a file, its claim, validation — an event — and enqueue;
 *                   its traceparent rides in the job's data)
 *     process <kind> (CONSUMER, one per run of the job: a child of the publish span, and linked
 *                     to it; its event `settled <result>` is the item's end)
 *       POST / PUT (CLIENT: the API request, with traceparent)
 * The file's move to archive/ or failed/ is no span: its log line names the trace.
 * Names (delivery id, file) are on the root only; the other spans carry what is theirs.
 * A span is handed on explicitly (runtime/tracing.ts says why no AsyncLocalStorage runs): as an
 * argument, or active in a call's synchronous part (withSpan), or bound to a job (bindSpan /
 * spanBoundTo); log lines name it through loggerIn.
 * Events of a file are items of their own: each event's publish span starts a trace of its own,
 * linked to the file's claim (`claim events`, a root of its own), so a file of 10,000 events is
 * 10,000 small traces, not one giant one.
 */
import {
  context,
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';

export { SpanKind, type Attributes, type Span };

const TRACER_NAME = 'carrier-sync';

let isOn = false;
/** The SDK's tracer, once registered (the API builds a cache key string on every getTracer). */
let sdkTracer: ReturnType<typeof trace.getTracer> | undefined;

/** Said once by runtime/tracing.ts when the SDK is registered: work done only for spans is skipped until then. */
export function markTracingOn(): void {
  isOn = true;
  sdkTracer = trace.getTracer(TRACER_NAME);
}

/** Whether spans are recorded in this process (an OTLP endpoint is set). */
export function isTracingOn(): boolean {
  return isOn;
}

/** The tracer; the API hands out a no-op one until the SDK is registered. */
export function tracer(): ReturnType<typeof trace.getTracer> {
  return sdkTracer ?? trace.getTracer(TRACER_NAME);
}

/** The span `inSpan` hands over while tracing is off: records nothing, costs nothing. */
const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Runs `work` with a new span that ends with it: an error it throws marks the span (unless
 * `isError` says no). The span is not made active: whoever starts a child is handed it (a plain
 * start and a then, no context switch or closure of the SDK's a call: BENCHMARKS.md, issue 38).
 */
export function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[]; root?: boolean; parent?: Context; isError?: (error: unknown) => boolean },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!isOn) return work(NO_SPAN);
  // The SDK reads kind, attributes, links and root of the options; parent and isError are ours.
  const span = tracer().startSpan(name, options, options.parent ?? context.active());
  let running: Promise<T>;
  try {
    running = work(span);
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      if (options.isError?.(error) ?? true) markError(span, error);
      span.end();
      throw error;
    },
  );
}

/** Marks a span failed: `error.type` is the SyncError code (or the error's class), the message only the error's. */
export function markError(span: Span, error: unknown, type?: string): void {
  if (!span.isRecording()) return;
  const code = typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  span.setAttribute('error.type', type ?? code ?? (error instanceof Error ? error.name : 'unknown'));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** The W3C traceparent of a span (`00-<trace id>-<span id>-<flags>`), or undefined for the no-op one. */
export function traceparentOf(span: Span | undefined): string | undefined {
  const ids = span?.spanContext();
  if (ids === undefined || !trace.isSpanContextValid(ids)) return undefined;
  return `00-${ids.traceId}-${ids.spanId}-0${ids.traceFlags & TraceFlags.SAMPLED}`;
}

/** The span context a traceparent names (as propagated: remote), or undefined when it is absent or malformed. */
export function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  if (traceparent === undefined) return undefined;
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent);
  if (match === null) return undefined;
  const ids: SpanContext = { traceId: match[1] as string, spanId: match[2] as string, traceFlags: parseInt(match[3] as string, 16), isRemote: true };
  return trace.isSpanContextValid(ids) ? ids : undefined;
}

/** A context whose parent is the span these ids name (as spanContextOf reads them from a traceparent), or the active one when there are none. */
export function contextOf(ids: SpanContext | undefined): Context {
  return ids === undefined ? context.active() : trace.setSpanContext(context.active(), ids);
}

/** The active span's context, as a link for a span that starts a trace of its own. */
export function activeLinks(): Link[] {
  const ids = trace.getActiveSpan()?.spanContext();
  return ids !== undefined && trace.isSpanContextValid(ids) ? [{ context: ids }] : [];
}

/** Runs `work` with `span` as the active span (for spans started by hand and ended elsewhere). */
export function withSpan<T>(span: Span | undefined, work: () => T): T {
  if (!isOn || span === undefined) return work();
  return context.with(trace.setSpan(context.active(), span), work);
}

/** The trace id a traceparent names, or undefined. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return spanContextOf(traceparent)?.traceId;
}

/**
 * `logger` with the span's trace_id and span_id on every line, for work that goes on after an
 * await (the active span is known only in a call's synchronous part: see runtime/tracing.ts).
 */
export function loggerIn<L extends { child(bindings: Record<string, string>): L }>(logger: L, span: Span): L {
  const ids = span.spanContext();
  return span.isRecording() ? logger.child({ trace_id: ids.traceId, span_id: ids.spanId }) : logger;
}

const boundSpans = new WeakMap<object, Span>();

/** Remembers the span of a piece of work (a job's run) for the code that handles it further on. */
export function bindSpan(owner: object, span: Span): void {
  boundSpans.set(owner, span);
}

export function spanBoundTo(owner: object): Span | undefined {
  return boundSpans.get(owner);
}

/** What an item's spans say of it (never its bytes, keys or tokens). */
export interface TracedItem {
  kind: string;
  deliveryId: string;
  origin: { source: string; fileName?: string; line?: number };
}

/** The attributes naming an item, for its root span: delivery id, and its file (and line) or, without one, its source. */
export function itemAttributes(item: TracedItem): Attributes {
  const attributes: Attributes = { 'carrier_sync.delivery_id': item.deliveryId };
  if (item.origin.fileName === undefined) attributes['carrier_sync.source'] = item.origin.source;
  else attributes['carrier_sync.file'] = item.origin.fileName;
  if (item.origin.line !== undefined) attributes['carrier_sync.line'] = item.origin.line;
  return attributes;
}

const messaging = new Map<string, Attributes>();

/**
 * OTel messaging attributes of a queue operation (`send` by the producer, `process` by a worker):
 * one constant object a queue and operation (the job's id is the producer's alone).
 */
export function messagingAttributes(queue: string, operation: 'send' | 'process'): Attributes {
  const key = `${operation} ${queue}`;
  let attributes = messaging.get(key);
  if (attributes === undefined) {
    attributes = Object.freeze({ 'messaging.system': 'bullmq', 'messaging.destination.name': queue, 'messaging.operation.type': operation });
    messaging.set(key, attributes);
  }
  return attributes;
}

/**
 * `logger` with the trace_id and span_id a traceparent names on every line (the file's move, done
 * by the spool's owner once the item has settled, logs under the item's root span).
 */
export function loggerOf<L extends { child(bindings: Record<string, string>): L }>(logger: L, traceparent: string | undefined): L {
  const ids = isOn ? spanContextOf(traceparent) : undefined;
  return ids === undefined ? logger : logger.child({ trace_id: ids.traceId, span_id: ids.spanId });
}
