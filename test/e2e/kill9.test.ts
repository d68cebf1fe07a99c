/**
 * kill -9 of the built daemon while labels, CT-e and collecting events are in flight, then a
 * restart: every file ends exactly once under archive/, every document reaches its delivery, and no
 * collecting event is accepted twice. Judged from the sandbox's own request log and the spool.
 *
 * One window is inherent: an event the API accepted whose answer the killed process never
 * recorded is sent again after the restart and answered as a repeat (success:false). Such a repeat
 * is allowed only for an event the API received before the kill, and only a few of them (at most
 * one per worker slot).
 */
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxRequest } from '../../src/sandbox/server.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const LABELS = 40;
const CTES = 20;
const EVENT_DELIVERIES = 10;
const EVENTS_PER_DELIVERY = 5;
const CONCURRENCY = 4;
const TOTAL_REQUESTS = LABELS + CTES + EVENT_DELIVERIES * EVENTS_PER_DELIVERY;

let t: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await t?.close();
  t = undefined;
});

interface Drop {
  labels: Map<string, Buffer>;
  ctes: Map<string, string>;
  /** delivery id → epoch ms of its events. */
  events: Map<string, number[]>;
  eventsFile: string;
}

async function dropEverything(env: E2eEnv): Promise<Drop> {
  const labels = new Map<string, Buffer>();
  const ctes = new Map<string, string>();
  const events = new Map<string, number[]>();
  for (let i = 0; i < LABELS; i += 1) labels.set(randomUUID(), await makePdf(`label ${i}`));
  for (let i = 0; i < CTES; i += 1) ctes.set(randomUUID(), makeCteXml({ nCT: String(1000 + i) }));
  const base = Date.now() - 3_600_000;
  const lines: string[] = [];
  for (let d = 0; d < EVENT_DELIVERIES; d += 1) {
    const deliveryId = randomUUID();
    const instants = Array.from({ length: EVENTS_PER_DELIVERY }, (_, i) => base + d * 60_000 + i * 1000);
    events.set(deliveryId, instants);
    // Alternate offsets: the dedup must compare instants, not texts.
    for (const [i, ms] of instants.entries())
      lines.push(JSON.stringify({ delivery_id: deliveryId, event_at: i % 2 === 0 ? new Date(ms).toISOString() : minus3h(ms) }));
  }
  const eventsFile = `collecting-${randomUUID()}.ndjson`;
  await Promise.all([
    ...[...labels].map(([id, pdf]) => dropFile(join(env.spool, 'labels'), `${id}.pdf`, pdf)),
    ...[...ctes].map(([id, xml]) => dropFile(join(env.spool, 'cte'), `${id}.xml`, xml)),
    dropFile(join(env.spool, 'events'), eventsFile, `${lines.join('\n')}\n`),
  ]);
  return { labels, ctes, events, eventsFile };
}

/** The same instant written at -03:00. */
function minus3h(ms: number): string {
  return `${new Date(ms - 3 * 3_600_000).toISOString().replace('Z', '')}-03:00`;
}

async function startDaemon(env: E2eEnv): Promise<DaemonProcess> {
  const daemon = spawnDaemon(env.env, { args: env.args('start') });
  await waitUntilStarted(daemon);
  return daemon;
}

/** Files under archive/<kind>/, the date folder left out. */
async function archived(env: E2eEnv, kind: string): Promise<string[]> {
  return (await listFiles(join(env.spool, 'archive', kind))).map((path) => path.replace(/^\d{4}-\d{2}-\d{2}\//, '')).sort();
}

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function killAndRecover(env: E2eEnv, daemon: DaemonProcess, drop: Drop, killWhen: { what: string; answered: number }): Promise<void> {
  await waitFor(() => env.sandbox.requests().length >= killWhen.answered, { what: killWhen.what, intervalMs: 5, timeoutMs: 20_000 });
  const killSentAt = Date.now();
  daemon.kill('SIGKILL');
  const exit = await daemon.exited;
  const killedAt = Date.now();
  expect(exit.signal).toBe('SIGKILL');
  const answeredAtKill = env.sandbox.requests().length;
  const inflightAtKill = (await listFiles(join(env.spool, '.inflight'))).length;
  expect(answeredAtKill, 'the kill came before the work was done').toBeLessThan(TOTAL_REQUESTS);

  const again = await startDaemon(env);
  const expected = {
    labels: [...drop.labels.keys()].map((id) => `${id}.pdf`).sort(),
    cte: [...drop.ctes.keys()].map((id) => `${id}.xml`).sort(),
    events: [drop.eventsFile],
  };
  const total = expected.labels.length + expected.cte.length + expected.events.length;
  await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length >= total && (await listFiles(join(env.spool, '.inflight'))).length === 0, {
    what: `all ${total} files archived after the restart`,
    timeoutMs: 30_000,
  }).catch(async (error: Error) => {
    const left = await listFiles(env.spool);
    throw new Error(
      `${error.message}\nnot archived: ${left.filter((f) => !f.startsWith('archive/')).join(', ')}\n--- first daemon\n${daemon.tail(15)}\n--- after restart\n${again.tail(40)}`,
    );
  });
  again.kill('SIGTERM');
  expect(await again.exited, again.tail()).toEqual({ code: 0, signal: null });

  // The spool: every file exactly once under archive/, nothing anywhere else.
  expect(await archived(env, 'labels')).toEqual(expected.labels);
  expect(await archived(env, 'cte')).toEqual(expected.cte);
  expect(await archived(env, 'events')).toEqual(expected.events);
  expect(await listFiles(join(env.spool, 'failed'))).toEqual([]);
  expect(await listFiles(join(env.spool, '.inflight'))).toEqual([]);
  for (const inbox of ['labels', 'cte', 'events']) expect(await listFiles(join(env.spool, inbox))).toEqual([]);

  // The API: every document reached its delivery.
  const requests = env.sandbox.requests();
  const of = (endpoint: SandboxRequest['endpoint']): SandboxRequest[] => requests.filter((r) => r.endpoint === endpoint);
  expect(
    requests.filter((r) => r.status !== 200).map((r) => `${r.endpoint} ${r.status}`),
    'only 200 answers',
  ).toEqual([]);
  for (const [id, pdf] of drop.labels) expect(env.sandbox.state.deliveries.get(id)?.label?.sha256, `label of ${id}`).toBe(sha(pdf));
  for (const id of drop.ctes.keys()) expect(env.sandbox.state.deliveries.get(id)?.cte, `CT-e of ${id}`).toBeTruthy();

  // Collecting: each instant recorded once per delivery; repeats only from the inherent window.
  for (const [id, instants] of drop.events) {
    const recorded = (env.sandbox.state.deliveries.get(id)?.events ?? []).map((e) => Date.parse(e.event_at)).sort((a, b) => a - b);
    expect(recorded, `events of ${id}`).toEqual(instants);
  }
  const collecting = of('collecting');
  const repeats = collecting.filter((r) => r.isRepeat === true);
  const firstAccepted = (r: SandboxRequest): SandboxRequest | undefined =>
    collecting.find((c) => c.isRepeat !== true && c.deliveryId === r.deliveryId && Date.parse(c.eventAt ?? '') === Date.parse(r.eventAt ?? ''));
  for (const repeat of repeats) {
    expect(firstAccepted(repeat)?.at, `a repeat of ${repeat.deliveryId} ${repeat.eventAt} must re-send an event received before the kill`).toBeLessThan(
      killedAt,
    );
  }
  expect(repeats.length, 'events sent twice (inherent send→record window only)').toBeLessThanOrEqual(CONCURRENCY);

  // Of the repeats, those whose first answer left the API after SIGKILL was sent could never have
  // been recorded; the others were answered, but the process died before recording the result.
  const unseen = repeats.filter((r) => {
    const first = firstAccepted(r)!;
    return first.at + first.durationMs >= killSentAt;
  }).length;
  const resent = (endpoint: 'label' | 'cte'): number => of(endpoint).length - new Set(of(endpoint).map((r) => r.deliveryId)).size;
  console.info(
    `[kill -9 ${killWhen.what}] answered before the kill ${answeredAtKill}/${TOTAL_REQUESTS}, files in flight ${inflightAtKill}; ` +
      `after restart: ${requests.length} requests, documents sent again ${resent('label') + resent('cte')}, ` +
      `collecting repeats ${repeats.length} (${unseen} answered after the kill, ${repeats.length - unseen} answered but not recorded)`,
  );
  expect([...daemon.stderrLines, ...again.stderrLines].join('\n')).not.toContain(env.carrierKey);
}

describe('kill -9 and restart', () => {
  it('while the first files are being claimed and sent: nothing lost, nothing doubled', async () => {
    // Slow enough answers that requests are in flight at the kill.
    const env = (t = await createE2eEnv({
      sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 20, latencyJitterMs: 80 } },
      settings: { delivery: { concurrency: CONCURRENCY } },
    }));
    const drop = await dropEverything(env);
    const daemon = await startDaemon(env);
    await killAndRecover(env, daemon, drop, { what: 'at the first answers', answered: 3 });
  });

  it('a third of the way through: nothing lost, nothing doubled', async () => {
    const env = (t = await createE2eEnv({
      sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 20, latencyJitterMs: 80 } },
      settings: { delivery: { concurrency: CONCURRENCY } },
    }));
    const daemon = await startDaemon(env);
    const drop = await dropEverything(env);
    await killAndRecover(env, daemon, drop, { what: 'a third of the way', answered: Math.floor(TOTAL_REQUESTS / 3) });
  });
});
