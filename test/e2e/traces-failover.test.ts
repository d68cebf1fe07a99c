/**
 * Traces across a Redis failover (issue 38): a traced daemon on a Sentinel topology, labels and
 * events dropped before the primary is killed -9 and labels dropped while it is gone, a sandbox
 * API that answers slowly so that items are mid-flight at the kill. Once every file is archived,
 * every item has exactly one trace that reached its end (root → process → request, `settled`),
 * no span is orphaned (its parent is in its trace, its links point at spans received), and the
 * receiver was sent no span twice. A file claimed twice (a claim Redis refused while it was away,
 * or a file taken up again from .inflight/ when its outcome was lost with the old primary) has a
 * second trace: the claim's root span alone, never a second trace with attempts.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { startSentinelSet, type SentinelSet } from '../support/redis-topologies.js';
import { waitFor } from '../support/wait.js';

const KIND = { client: 3, producer: 4, consumer: 5 } as const;
const LABELS_BEFORE = 24;
const LABELS_DURING = 6;
const EVENT_DELIVERIES = 6;

let receiver: OtlpReceiver;
let env: E2eEnv;
let set: SentinelSet;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, ratePerMinute: 100_000, faults: { latencyMs: 300, latencyJitterMs: 200 } } });
  set = await startSentinelSet();
}, 60_000);
afterAll(async () => {
  await killAllDaemons();
  await set?.close();
  await env?.close();
  await receiver?.stop();
}, 60_000);

const rootsOf = (spans: readonly ReceivedSpan[], name: string, attribute: string, value: string | number): ReceivedSpan[] =>
  spans.filter((span) => span.parentSpanId === '' && span.name === name && span.attributes[attribute] === value);
const isSettled = (traceId: string, spans: readonly ReceivedSpan[]): boolean =>
  spans.some((span) => span.traceId === traceId && span.events.some((event) => event.startsWith('settled ')));

/**
 * The one trace of an item that went the whole way. Any other trace of its file is a lone root
 * span: a claim Redis refused while it was away (failed; the file was put back), or the file taken
 * up again from .inflight/ after its outcome message was lost with the old primary (resumed; its
 * enqueue finds the item's job done or queued, and nothing is sent again).
 */
function wholeTraceOf(spans: readonly ReceivedSpan[], roots: readonly ReceivedSpan[], what: string): ReceivedSpan[] {
  const withAttempts = roots.filter((root) => spans.some((span) => span.traceId === root.traceId && span.parentSpanId === root.spanId));
  const detail = withAttempts
    .map((root) =>
      [
        JSON.stringify(root.attributes),
        ...spans
          .filter((span) => span.traceId === root.traceId && span !== root)
          .map((span) => `  ${span.name} ${JSON.stringify(span.attributes)} ${span.events.join('|')}`),
      ].join('\n'),
    )
    .join('\n---\n');
  expect(withAttempts, `${what}: one trace with attempts among ${roots.length}:\n${detail}`).toHaveLength(1);
  for (const other of roots.filter((root) => root !== withAttempts[0])) {
    const isResumed = other.attributes['carrier_sync.resumed'] === true && /^already-/.test(String(other.attributes['carrier_sync.enqueue.result']));
    // Given up: failed (status 2), or stepped back ('changed': the watcher lost the spool's lease to
    // the failover between its read and its move, or the file moved; the claim is tried again later,
    // and that later claim is the trace with attempts). Seen once in a clean-clone suite under load.
    const isGivenUp = other.statusCode === 2 || other.attributes['carrier_sync.claim.result'] === 'changed';
    expect(isGivenUp || isResumed, `${what}: another trace is a claim given up or resumed: ${JSON.stringify(other)}`).toBe(true);
    expect(spans.filter((span) => span.traceId === other.traceId)).toEqual([other]);
  }
  const root = withAttempts[0] as ReceivedSpan;
  const trace = spans.filter((span) => span.traceId === root.traceId);
  const processes = trace.filter((span) => span.name.startsWith('process '));
  expect(processes.length, `${what}: at least one attempt`).toBeGreaterThan(0);
  for (const process of processes) {
    expect(process, `${what}: each attempt a child of, and linked to, the root`).toMatchObject({
      kind: KIND.consumer,
      parentSpanId: root.spanId,
      links: [{ traceId: root.traceId, spanId: root.spanId }],
    });
  }
  // The end: an attempt settled, whose request the API answered 200.
  const settled = processes.filter((process) => process.events.includes('settled accepted'));
  expect(settled.length, `${what}: settled accepted`).toBeGreaterThan(0);
  const answered = trace.filter((span) => span.kind === KIND.client && span.attributes['http.response.status_code'] === 200);
  expect(
    answered.some((client) => processes.some((process) => process.spanId === client.parentSpanId)),
    `${what}: a request answered 200 under an attempt`,
  ).toBe(true);
  return trace;
}

it('a failover of the Redis primary (Sentinel) mid-flight leaves every item one whole trace: no orphan span, no span twice', { timeout: 180_000 }, async () => {
  const prefix = `{${env.prefix}}`;
  const daemon = spawnDaemon(
    {
      ...env.env,
      CARRIER_SYNC_REDIS_SENTINELS: set.sentinels,
      REDIS_URL: set.url,
      CARRIER_SYNC_PREFIX: prefix,
      CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: '100000',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
    { args: env.args('start') },
  );
  await waitUntilStarted(daemon, 30_000);

  // Before: labels, and an events file (two events a delivery).
  const before = Array.from({ length: LABELS_BEFORE }, () => randomUUID());
  const eventIds = Array.from({ length: EVENT_DELIVERIES }, () => randomUUID());
  const base = Date.now() - 3_600_000;
  const events = eventIds.flatMap((id, i) => [0, 1].map((n) => ({ delivery_id: id, event_at: new Date(base + i * 10_000 + n * 1000).toISOString() })));
  await Promise.all(before.map(async (id) => dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf(id))));
  await dropFile(join(env.spool, 'events'), 'failover.ndjson', `${events.map((event) => JSON.stringify(event)).join('\n')}\n`);

  // The kill, with requests on the wire (the API takes 300–500 ms to answer).
  await waitFor(() => env.sandbox.requests().length >= 8, { timeoutMs: 30_000, what: 'eight answers before the kill' });
  const primary = await set.currentPrimaryPort();
  await set.kill(primary);
  // During: labels dropped while the primary is gone.
  const during = Array.from({ length: LABELS_DURING }, () => randomUUID());
  await Promise.all(during.map(async (id) => dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf(id))));
  await waitFor(async () => (await set.currentPrimaryPort()) !== primary, { timeoutMs: 30_000, intervalMs: 100, what: 'a replica promoted' });

  const labels = [...before, ...during];
  // 100 s: an event whose job the failover lost holds its delivery's next event for the chain's
  // missing-job grace (30 s, gate/push-gate.ts) and a park (5 s); on a loaded machine (a clean-clone
  // run, 1 run in 10) that came on top of a slow drain.
  await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length === labels.length + 1, {
    timeoutMs: 100_000,
    what: 'every file archived',
  }).catch(async (error: Error) => {
    const elsewhere = (await listFiles(env.spool)).filter((file) => !file.startsWith('archive/'));
    throw new Error(`${error.message}; not archived: ${elsewhere.join(', ')}\n${daemon.tail(60)}`);
  });
  // Every item's end exported.
  const labelRoots = (spans: readonly ReceivedSpan[], id: string): ReceivedSpan[] => rootsOf(spans, 'publish label', 'carrier_sync.file', `${id}.pdf`);
  const eventRoots = (spans: readonly ReceivedSpan[], line: number): ReceivedSpan[] => rootsOf(spans, 'publish collecting', 'carrier_sync.line', line);
  await waitFor(
    () => {
      const spans = receiver.spans();
      return (
        labels.every((id) => labelRoots(spans, id).some((root) => isSettled(root.traceId, spans))) &&
        events.every((_, i) => eventRoots(spans, i + 1).some((root) => isSettled(root.traceId, spans)))
      );
    },
    { timeoutMs: 30_000, what: "every item's end exported" },
  );

  const spans = receiver.spans();
  // No span twice.
  const ids = spans.map((span) => span.spanId);
  expect(ids.length - new Set(ids).size, 'spans received twice').toBe(0);
  // No orphan: every parent in its trace, every link to a span received.
  const byId = new Map(spans.map((span) => [span.spanId, span]));
  const orphans = spans.filter((span) => span.parentSpanId !== '' && byId.get(span.parentSpanId)?.traceId !== span.traceId);
  expect(
    orphans.map((span) => `${span.name} ${span.spanId} ← ${span.parentSpanId}`),
    'orphan spans',
  ).toEqual([]);
  const dangling = spans.flatMap((span) => span.links.filter((link) => byId.get(link.spanId)?.traceId !== link.traceId));
  expect(dangling, 'links to spans never received').toEqual([]);

  // Each item: one whole trace.
  for (const id of labels) wholeTraceOf(spans, labelRoots(spans, id), `label ${id}`);
  const claim = rootsOf(spans, 'claim events', 'carrier_sync.file', 'failover.ndjson');
  expect(claim.filter((root) => root.statusCode !== 2)).toHaveLength(1);
  events.forEach((event, i) => {
    const trace = wholeTraceOf(spans, eventRoots(spans, i + 1), `event ${event.delivery_id} line ${i + 1}`);
    expect(trace.find((span) => span.parentSpanId === '')?.links.map((link) => link.spanId)).toEqual([claim.find((root) => root.statusCode !== 2)?.spanId]);
  });
  // Every label's file went through once: the traces name every one of them.
  expect(
    new Set(spans.filter((span) => span.kind === KIND.producer && span.name === 'publish label').map((span) => span.attributes['carrier_sync.file'])),
  ).toEqual(new Set(labels.map((id) => `${id}.pdf`)));
});
