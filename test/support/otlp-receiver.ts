/**
 * A small OTLP/HTTP trace receiver on loopback (http/json, as OpenTelemetry's own exporter tests
 * use): it keeps every span it is sent, flattened, for assertions. `stop()` closes it (an exporter
 * then finds the port refused), `start()` opens it again on the same port; `answer('hang')` takes
 * requests and answers none (a backend slow to the point of stalling), `answer('refuse')` answers
 * 400 (an export given up at once), `answer('ok')` takes spans again (held requests are dropped).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** The names of the span's events. */
  events: string[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  service: string;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans(): readonly ReceivedSpan[];
  /** Export requests received (including ones that carried no spans). */
  requests(): number;
  stop(): Promise<void>;
  start(): Promise<void>;
  answer(mode: 'ok' | 'hang' | 'refuse'): void;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface WireSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: Array<{ traceId: string; spanId: string }>;
  events?: Array<{ name: string }>;
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: WireSpan[] }> }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  let requests = 0;
  let port = 0;
  let server: Server | null = null;
  let mode: 'ok' | 'hang' | 'refuse' = 'ok';
  const held = new Set<ServerResponse>();

  const open = async (): Promise<void> => {
    if (server !== null) return;
    const next = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (mode === 'hang') {
          held.add(response);
          return;
        }
        if (mode === 'refuse') {
          response.writeHead(400, { 'content-type': 'application/json' }).end('{"message":"refused by the test"}');
          return;
        }
        if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).includes('json')) {
          response.writeHead(415).end();
          return;
        }
        requests += 1;
        received.push(...flatten(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve));
    port = (next.address() as AddressInfo).port;
    server = next;
  };
  await open();

  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => received,
    requests: () => requests,
    async stop() {
      const current = server;
      server = null;
      if (current === null) return;
      current.closeAllConnections();
      await new Promise<void>((resolve) => current.close(() => resolve()));
    },
    start: open,
    answer(next) {
      mode = next;
      if (next === 'hang') return;
      for (const response of held) response.destroy();
      held.clear();
    },
  };
}

function flatten(body: ExportRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
          events: (span.events ?? []).map(({ name }) => name),
          statusCode: span.status?.code ?? 0,
          service,
        });
      }
    }
  }
  return out;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    const plain = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? undefined : Number(value.intValue));
    if (plain !== undefined) out[key] = plain;
  }
  return out;
}
