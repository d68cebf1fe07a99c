/**
 * Tracing end to end (docs/tracing.md): the built daemon, spawned with an OTLP endpoint on a
 * loopback receiver (http/json), and the sandbox API. One trace per item with the spans the docs
 * list; an attempt answered 503 and the next 200 are two process spans of one trace; the API
 * request carries the CLIENT span's traceparent; log lines and the journey name the trace; with the
 * receiver gone the work goes on and the export queue's bound drops (and counts) spans.
 */
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JourneyStep } from '../../src/journey/journey-read.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { killAllDaemons, runCli, spawnDaemon, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const KIND = { internal: 1, client: 3, producer: 4, consumer: 5 } as const;
const TRACE_URL = { CARRIER_SYNC_TRACE_URL: 'https://tempo.example/trace/{traceId}?orgId=1' };

let env: E2eEnv;
let receiver: OtlpReceiver;
/** One daemon for the file (a second watcher would wait for the first one's spool lease to lapse). */
let daemon: DaemonProcess;
let opsUrl: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  env = await createE2eEnv();
  // Retries after 2 s: the 503 test turns the fault off well before the second attempt.
  ({ daemon, opsUrl } = await startTraced({
    OTEL_BSP_MAX_QUEUE_SIZE: '64',
    OTEL_EXPORTER_OTLP_TIMEOUT: '15000',
    CARRIER_SYNC_BACKOFF_MS: '2000',
    ...TRACE_URL,
  }));
}, 60_000);
afterAll(async () => {
  if (daemon.isRunning()) {
    daemon.kill('SIGTERM');
    await daemon.exited;
  }
  await killAllDaemons();
  await receiver.stop();
  await env.close();
});

async function startTraced(extra: Record<string, string> = {}): Promise<{ daemon: DaemonProcess; opsUrl: string }> {
  const daemon = spawnDaemon(
    {
      ...env.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      ...extra,
    },
    { args: env.args('start') },
  );
  const started = await daemon.waitForLog((line) => line.msg === 'carrier-sync started', { timeoutMs: 30_000, what: 'daemon started' });
  return { daemon, opsUrl: String(started['opsUrl']) };
}

const inTrace = (traceId: string): ReceivedSpan[] => receiver.spans().filter((span) => span.traceId === traceId);
const named = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan[] => spans.filter((span) => span.name === name);
const one = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan => {
  const found = named(spans, name);
  const all = spans.map((span) => `${span.name} (${span.spanId} ← ${span.parentSpanId || 'root'})`).join(', ');
  expect(
    found.map((span) => span.name),
    `one ${name} span among ${all}`,
  ).toEqual([name]);
  return found[0] as ReceivedSpan;
};
const traceOfFile = (file: string, name: string): string | undefined =>
  receiver.spans().find((span) => span.name.startsWith(name) && span.attributes['carrier_sync.file'] === file)?.traceId;

/** This daemon's dropped-span counters, from /metrics. */
async function droppedSpans(): Promise<{ queueFull: number; exportFailed: number }> {
  const text = await (await fetch(`${opsUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const count = (reason: string): number => Number(new RegExp(`carrier_sync_trace_spans_dropped_total\\{reason="${reason}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { queueFull: count('queue_full'), exportFailed: count('export_failed') };
}

async function historyOf(deliveryId: string): Promise<JourneyStep[]> {
  const result = await runCli(env.args('history', deliveryId, '--json'), { env: env.env, timeoutMs: 15_000 });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JourneyStep);
}

/** The document trip every label and CT-e shares: publish (the claim, its validation and enqueue) → process (settled) → POST. */
function expectDocumentTrip(spans: readonly ReceivedSpan[], kind: string, deliveryId: string, fileName: string, method = 'POST'): { client: ReceivedSpan } {
  const publish = one(spans, `publish ${kind}`);
  expect(publish).toMatchObject({ kind: KIND.producer, parentSpanId: '', events: [] });
  expect(publish.attributes).toMatchObject({
    'messaging.destination.name': kind,
    'messaging.operation.type': 'send',
    'carrier_sync.delivery_id': deliveryId,
    'carrier_sync.file': fileName,
    'carrier_sync.enqueue.result': 'queued',
  });
  const process = one(spans, `process ${kind}`);
  // The attempt is the publish span's child and is linked to it (docs/tracing.md: why both).
  expect(process).toMatchObject({ kind: KIND.consumer, parentSpanId: publish.spanId, links: [{ traceId: publish.traceId, spanId: publish.spanId }] });
  expect(process.attributes).toMatchObject({
    'carrier_sync.attempt': 1,
    'carrier_sync.result': 'accepted',
    'messaging.destination.name': kind,
    'messaging.operation.type': 'process',
  });
  const client = one(spans, method);
  expect(client).toMatchObject({ kind: KIND.client, parentSpanId: process.spanId });
  expect(client.attributes).toMatchObject({ 'http.request.method': method, 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
  expect(String(client.attributes['url.full'])).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/delivery\//);
  expect(process.events).toEqual(['settled accepted']);
  // Three spans an item: the file's move is no span (its log line names the trace).
  expect(spans).toHaveLength(3);
  return { client };
}

/** The trace of a document's file, once its item has settled (its process span's end event). */
async function settledTraceOf(file: string, timeoutMs?: number): Promise<string> {
  const traceId = await waitFor(() => traceOfFile(file, 'publish'), { what: `${file}'s publish span`, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  await waitFor(() => inTrace(traceId).some((span) => span.events.some((event) => event.startsWith('settled '))), { what: `${file}'s item settled` });
  return traceId;
}

describe('traces of items', () => {
  it('a label, a CT-e and an event each make one trace, from the claim to the API answer and the archive; traceparent reaches the API', async () => {
    const label = env.sandbox.state.addDelivery().id;
    const cte = env.sandbox.state.addDelivery().id;
    const event = env.sandbox.state.addDelivery().id;
    await dropFile(join(env.spool, 'labels'), `${label}.pdf`, await makePdf('traced'));
    await dropFile(join(env.spool, 'cte'), `${cte}.xml`, makeCteXml());
    await dropFile(join(env.spool, 'events'), 'traced.ndjson', `${JSON.stringify({ delivery_id: event, event_at: '2026-01-02T03:04:05Z' })}\n`);
    await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length === 3, { what: 'three files archived', timeoutMs: 30_000 });

    const labelTrace = await settledTraceOf(`${label}.pdf`);
    const { client } = expectDocumentTrip(inTrace(labelTrace), 'label', label, `${label}.pdf`);
    const cteTrace = await settledTraceOf(`${cte}.xml`);
    expect(cteTrace).not.toBe(labelTrace);
    const cteTrip = expectDocumentTrip(inTrace(cteTrace), 'cte', cte, `${cte}.xml`, 'PUT');
    expect(cteTrip.client.attributes['url.full']).toMatch(/\/v1\/delivery\/cte$/);

    // The API saw the CLIENT span as the caller: its traceparent names that span.
    const labelRequest = env.sandbox.requests().find((request) => request.endpoint === 'label' && request.deliveryId === label);
    expect(labelRequest?.traceparent).toBe(`00-${labelTrace}-${client.spanId}-01`);
    expect(env.sandbox.requests().every((request) => request.traceparent !== undefined)).toBe(true);

    // An event of a file: a trace of its own, linked to the file's claim.
    const eventPublish = await waitFor(() =>
      receiver.spans().find((span) => span.name === 'publish collecting' && span.attributes['carrier_sync.delivery_id'] === event),
    );
    const fileClaim = receiver.spans().find((span) => span.name === 'claim events' && span.attributes['carrier_sync.file'] === 'traced.ndjson');
    expect(fileClaim).toMatchObject({ kind: KIND.internal, parentSpanId: '', events: ['validated'] });
    expect(eventPublish).toMatchObject({ kind: KIND.producer, parentSpanId: '', links: [{ traceId: fileClaim?.traceId, spanId: fileClaim?.spanId }] });
    expect(eventPublish.attributes).toMatchObject({ 'carrier_sync.file': 'traced.ndjson', 'carrier_sync.line': 1, 'messaging.operation.type': 'send' });
    expect(eventPublish.traceId).not.toBe(fileClaim?.traceId);
    const eventSpans = await waitFor(() => (named(inTrace(eventPublish.traceId), 'process collecting').length === 1 ? inTrace(eventPublish.traceId) : null));
    const eventProcess = one(eventSpans, 'process collecting');
    expect(eventProcess.events).toEqual(['settled accepted']);
    expect(eventProcess.parentSpanId).toBe(eventPublish.spanId);
    expect(one(eventSpans, 'POST').attributes['url.full']).toMatch(/\/v1\/delivery\/collecting$/);

    // Logs and the journey join the trace. 'item sent' is the delivery thread's line: it reaches the
    // main thread's stderr within 50 ms of being logged, so it is waited for, not assumed.
    const sent = await waitFor(() => daemon.logs().find((line) => line.msg === 'item sent' && line['deliveryId'] === label), {
      what: "the label's 'item sent' line",
    });
    expect(sent).toMatchObject({ trace_id: labelTrace });
    const archived = await waitFor(() => daemon.logs().find((line) => line.msg === 'file archived' && line['file'] === `${label}.pdf`), {
      what: "the label's 'file archived' line",
    });
    expect(archived).toMatchObject({ trace_id: labelTrace });
    const attempt = (await historyOf(label)).find((step) => step.step === 'attempt');
    expect(attempt).toMatchObject({ trace_id: labelTrace, status: 200 });

    // The resource: the service's name by default, and OTEL_RESOURCE_ATTRIBUTES; nothing of the key anywhere.
    expect(new Set(receiver.spans().map((span) => span.service))).toEqual(new Set(['carrier-sync']));
    expect(JSON.stringify(receiver.spans())).not.toContain(env.carrierKey);
  }, 90_000);

  it('an attempt answered 503 and the next answered 200 are two process spans, each with its request, in the item trace', async () => {
    const id = env.sandbox.state.addDelivery().id;
    env.sandbox.setFaults({ errorRate: 1 });
    await dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf('503 first'));
    // A 503 is answered before the body is read: the log names no delivery.
    await waitFor(() => env.sandbox.requests().some((request) => request.endpoint === 'label' && request.status === 503), { what: 'a 503' });
    env.sandbox.setFaults({ errorRate: 0 });
    const traceId = await settledTraceOf(`${id}.pdf`, 30_000);
    const spans = inTrace(traceId);
    const processes = named(spans, 'process label').sort((a, b) => Number(a.attributes['carrier_sync.attempt']) - Number(b.attributes['carrier_sync.attempt']));
    expect(processes.map((span) => [span.attributes['carrier_sync.attempt'], span.attributes['carrier_sync.result'], span.statusCode])).toEqual([
      [1, 'failed', 2],
      [2, 'accepted', 0],
    ]);
    const publish = one(spans, 'publish label');
    for (const process of processes) expect(process.parentSpanId).toBe(publish.spanId);
    const clients = named(spans, 'POST');
    const failed = clients.find((span) => span.parentSpanId === processes[0]?.spanId);
    expect(failed?.attributes).toMatchObject({ 'http.response.status_code': 503, 'error.type': '503' });
    expect(clients.find((span) => span.parentSpanId === processes[1]?.spanId)?.attributes).toMatchObject({ 'http.response.status_code': 200 });
    // Each attempt's journey step names the one trace.
    const attempts = (await historyOf(id)).filter((step) => step.step === 'attempt');
    expect(attempts.map((step) => [step.status, step.trace_id])).toEqual([
      [503, traceId],
      [200, traceId],
    ]);
    // CARRIER_SYNC_TRACE_URL makes the id a link: in `history` and on the timeline page.
    const text = await runCli(env.args('history', id), { env: { ...env.env, ...TRACE_URL }, timeoutMs: 15_000 });
    expect(text.stdout).toMatch(new RegExp(`attempt 1 by \\S+ pid \\d+: HTTP 503 .* · trace https://tempo\\.example/trace/${traceId}\\?orgId=1\\n`));
    const page = await (await fetch(`${opsUrl}/ui/history/${id}`)).text();
    expect(page).toContain(`href="https://tempo.example/trace/${traceId}?orgId=1"`);
  }, 90_000);

  it('with the receiver stalled, refusing, then gone, every file still goes through; spans beyond the queue bound are dropped and counted', async () => {
    // Stalled: the first export (a batch of at most 64 spans) waits its timeout (15 s here) while
    // the burst's other spans (3 a label: 240) pile up past the queue's bound (64).
    receiver.answer('hang');
    try {
      const ids = Array.from({ length: 80 }, () => env.sandbox.state.addDelivery().id);
      const before = (await listFiles(join(env.spool, 'archive'))).length;
      const pdfs = await Promise.all(ids.map(() => makePdf(`unexported ${randomUUID()}`)));
      await Promise.all(ids.map((id, i) => dropFile(join(env.spool, 'labels'), `${id}.pdf`, pdfs[i] as Buffer)));
      await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length === before + ids.length, {
        what: 'every label archived',
        timeoutMs: 30_000,
      });
      // The delivery thread's counts reach the main thread's metrics once a second: wait for them.
      await waitFor(async () => (await droppedSpans()).queueFull > 0, { what: 'spans beyond the queue bound counted', timeoutMs: 10_000 });
      // Refusing: a batch the endpoint will not take is given up and counted.
      receiver.answer('refuse');
      await waitFor(async () => (await droppedSpans()).exportFailed > 0, { what: 'spans of a refused export counted', timeoutMs: 20_000 });
      // Gone: the port refuses connections; the work goes on.
      await receiver.stop();
      const more = env.sandbox.state.addDelivery().id;
      await dropFile(join(env.spool, 'labels'), `${more}.pdf`, await makePdf('receiver gone'));
      await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length === before + ids.length + 1, {
        what: 'a label archived with the receiver gone',
      });
    } finally {
      receiver.answer('ok');
      await receiver.start();
    }
  }, 90_000);

  it('after a kill -9 mid-request, the attempt after the restart is in the item trace, a child of and linked to its enqueue', async () => {
    const id = env.sandbox.state.addDelivery().id;
    env.sandbox.setFaults({ latencyMs: 60_000 });
    await dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf('cut by kill -9'));
    // The request is on the wire (the API holds it a minute) once its attempt step is written; it names the trace already.
    const cut = await waitFor(async () => (await historyOf(id)).find((step) => step.step === 'attempt'), { what: 'the attempt started', timeoutMs: 20_000 });
    const publish = await waitFor(() => receiver.spans().find((span) => span.name === 'publish label' && span.attributes['carrier_sync.delivery_id'] === id), {
      what: 'the publish span exported',
    });
    expect(cut.trace_id).toBe(publish.traceId);
    daemon.kill('SIGKILL');
    await daemon.exited;

    env.sandbox.setFaults({ latencyMs: 0 });
    ({ daemon } = await startTraced());
    const settled = await waitFor(
      () =>
        receiver
          .spans()
          .find((span) => span.name === 'process label' && span.traceId === publish.traceId && span.attributes['carrier_sync.result'] === 'accepted'),
      {
        what: 'the attempt after the restart',
        timeoutMs: 40_000,
      },
    );
    expect(settled).toMatchObject({ traceId: publish.traceId, parentSpanId: publish.spanId, links: [{ traceId: publish.traceId, spanId: publish.spanId }] });
    const attempts = await waitFor(async () => {
      const steps = (await historyOf(id)).filter((step) => step.step === 'attempt');
      return steps.length === 2 ? steps : null;
    });
    expect(attempts.map((step) => [step.answer ?? step.status, step.trace_id])).toEqual([
      ['none', publish.traceId],
      [200, publish.traceId],
    ]);
  }, 90_000);
});

describe('tracing off', () => {
  it('without an endpoint, the daemon works and never loads the OpenTelemetry SDK or an exporter (only the API, whose calls are no-ops)', async () => {
    const off = await createE2eEnv();
    // A module hook in the daemon writes down every @opentelemetry module it resolves.
    const seenFile = join(off.dir, 'otel-modules.txt');
    const hooks = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.includes('/@opentelemetry/')) appendFileSync(${JSON.stringify(seenFile)}, resolved.url + '\\n');
  return resolved;
}`;
    const register = join(off.dir, 'watch-otel.mjs');
    await writeFile(register, `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});\n`);
    try {
      const plain = spawnDaemon({ ...off.env, NODE_OPTIONS: `--import=${register}` }, { args: off.args('start') });
      await plain.waitForLog((line) => line.msg === 'carrier-sync started', { timeoutMs: 30_000, what: 'daemon started' });
      const id = off.sandbox.state.addDelivery().id;
      await dropFile(join(off.spool, 'labels'), `${id}.pdf`, await makePdf('untraced'));
      await waitFor(async () => (await listFiles(join(off.spool, 'archive'))).length === 1, { what: 'the label archived', timeoutMs: 30_000 });
      expect(off.sandbox.requests().find((request) => request.endpoint === 'label')?.traceparent).toBeUndefined();
      expect(plain.logs().some((line) => 'trace_id' in line)).toBe(false);
      const packages = new Set((await readFile(seenFile, 'utf8')).split('\n').flatMap((url) => /\/@opentelemetry\/([^/]+)\//.exec(url)?.[1] ?? []));
      expect([...packages]).toEqual(['api']);
      plain.kill('SIGTERM');
      await plain.exited;
    } finally {
      await off.close();
    }
  }, 60_000);
});
