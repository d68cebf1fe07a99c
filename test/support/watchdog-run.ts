/**
 * The watchdog's e2e runs (test/e2e/watchdog-*.test.ts): the built daemon with failpoints and a small
 * CARRIER_SYNC_STALL_MS, its /readyz and /healthz polled from the start, a webhook receiver for the
 * `stalled` notification. Two files, so the suite runs them side by side.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { makePdf } from './builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from './e2e-env.js';
import type { OwnRedis } from './own-redis.js';
import { startHttpReceiver, type HttpReceiver } from './notify-receivers.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from './process.js';
import { waitFor } from './wait.js';

export const STALL_MS = 3000;
/** Seen within the bound: the bound, a check's period, and room for a loaded machine. */
export const SEEN_WITHIN_MS = STALL_MS + 1000 + 4000;

let t: E2eEnv | undefined;
let receiver: HttpReceiver | undefined;
let poller: { stop(): void } | undefined;
let ownRedis: OwnRedis | undefined;

/** A Redis of the test's own, closed after the test. */
export function keepOwnRedis(redis: OwnRedis): OwnRedis {
  ownRedis = redis;
  return redis;
}

/** Call once in a test file: ends what each test started. */
export function cleanUpAfterEach(): void {
  afterEach(async () => {
    poller?.stop();
    await killAllDaemons();
    await receiver?.close();
    await ownRedis?.close();
    await t?.close();
    t = receiver = poller = ownRedis = undefined;
  });
}

export interface Running {
  env: E2eEnv;
  daemon: DaemonProcess;
  opsUrl: string;
  /** Every `/readyz` reason seen, polled every 100 ms from the start. */
  readyReasons: string[];
  /** Every `/readyz` answer: when its request left and when its answer came (this machine's clock, as the daemon's log times). */
  readyPolls: ReadyPoll[];
  /** Every `/healthz` 503 reason seen, polled likewise. */
  unhealthyReasons: string[];
  hook: HttpReceiver;
}

export interface ReadyPoll {
  sentAt: number;
  answeredAt: number;
  status: number;
  reason: string | undefined;
}

export async function start(
  failpoints: string,
  options: { sandbox?: SandboxOptions; env?: Record<string, string>; settings?: Record<string, unknown> } = {},
): Promise<Running> {
  t = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, ...options.sandbox }, settings: { shutdown: { graceMs: 5000 }, ...options.settings } });
  receiver = await startHttpReceiver();
  const daemon = spawnDaemon(
    {
      ...t.env,
      CARRIER_SYNC_STALL_MS: String(STALL_MS),
      CARRIER_SYNC_FAILPOINTS: failpoints,
      CARRIER_SYNC_DELIVERY_THREAD: 'on',
      CARRIER_SYNC_NOTIFY_WEBHOOK_URL: receiver.url,
      ...options.env,
    },
    { args: t.args('start') },
  );
  await waitUntilStarted(daemon);
  const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
  const readyReasons: string[] = [];
  const readyPolls: ReadyPoll[] = [];
  const unhealthyReasons: string[] = [];
  let isPolling = true;
  const poll = async (path: string, reasons: string[]): Promise<void> => {
    try {
      const sentAt = Date.now();
      const response = await fetch(`${opsUrl}${path}`, { signal: AbortSignal.timeout(2000) });
      const body = (await response.json()) as { reason?: string };
      if (path === '/readyz') readyPolls.push({ sentAt, answeredAt: Date.now(), status: response.status, reason: body.reason });
      if (response.status === 503 && body.reason !== undefined) reasons.push(body.reason);
    } catch {
      // the daemon is stopping
    }
  };
  void (async () => {
    while (isPolling) {
      await Promise.all([poll('/readyz', readyReasons), poll('/healthz', unhealthyReasons)]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  poller = { stop: () => (isPolling = false) };
  return { env: t, daemon, opsUrl, readyReasons, readyPolls, unhealthyReasons, hook: receiver };
}

export async function archived(env: E2eEnv): Promise<string[]> {
  return (await listFiles(join(env.spool, 'archive'))).map((path) => path.replace(/\/\d{4}-\d{2}-\d{2}\//, '/'));
}

export async function dropLabel(env: E2eEnv): Promise<string> {
  const name = `${randomUUID()}.pdf`;
  await dropFile(join(env.spool, 'labels'), name, await makePdf(name));
  return `labels/${name}`;
}

export const isError = (line: LogLine): boolean => (line.level ?? 0) >= 50 && (line.level ?? 0) < 60;
export const stalledNotifications = (hook: HttpReceiver): Array<{ state: string; summary: string; details: Record<string, unknown> }> =>
  hook.received
    .map((d) => d.json as { condition: string; state: string; summary: string; details: Record<string, unknown> })
    .filter((n) => n.condition === 'stalled');

/** The stall was seen in time, told once everywhere, and recovered: a file dropped after it is accepted and archived. */
export async function expectToldOnceAndRecovered(run: Running, reasonStart: string, faultAt: number, seenWithinMs = SEEN_WITHIN_MS): Promise<void> {
  const { daemon, env, hook } = run;
  const line = await daemon.waitForLog((l) => isError(l) && String(l.msg).startsWith('stalled:'), { timeoutMs: seenWithinMs + 5000, what: 'the stall line' });
  expect(String(line.msg)).toContain(reasonStart);
  expect(Number(line.time) - faultAt).toBeLessThan(seenWithinMs);
  const after = await dropLabel(env);
  await waitFor(async () => (await archived(env)).includes(after), { timeoutMs: 30_000, what: `${after} archived after the recovery` }).catch(
    (error: unknown) => {
      throw new Error(`${String(error)}\n${daemon.tail(60)}`);
    },
  );
  const recovered = await daemon.waitForLog((l) => l.msg === 'stall recovered', { timeoutMs: 15_000, what: 'stall recovered' });
  await waitFor(() => stalledNotifications(hook).some((n) => n.state === 'resolved'), { timeoutMs: 15_000, what: 'the stalled notification resolved' });
  const stallLines = (): string =>
    JSON.stringify(
      daemon
        .logs()
        .filter((l) => String(l.msg).startsWith('stall'))
        .map((l) => [l.time, l.msg]),
    );
  expect(
    stalledNotifications(hook).map((n) => n.state),
    stallLines(),
  ).toEqual(['firing', 'resolved']);
  expect(stalledNotifications(hook)[0]?.details['what']).toEqual(expect.stringContaining(reasonStart));
  // /readyz says the stall while it lasts: every poll made wholly between the stall line and the
  // recovery says it. The stall can be shorter than one poll on a loaded machine (a frozen check
  // thread is replaced at once and the next watchdog pass, ~1 s on, finds progress; the suite once
  // saw no poll inside it): then no poll could see it, and no poll is asked to.
  const inside = run.readyPolls.filter((poll) => poll.sentAt > Number(line.time) && poll.answeredAt < Number(recovered.time));
  const says = (reason: string | undefined): boolean =>
    reason !== undefined && reason.startsWith(`stalled: ${reasonStart}`) && / since \d{4}-\d\d-\d\dT/.test(reason);
  expect(inside.filter((poll) => poll.status !== 503 || !says(poll.reason))).toEqual([]);
  // A stall that lasted seconds was seen (polls leave every 100 ms and give up after 2 s).
  if (Number(recovered.time) - Number(line.time) > 5000) expect(inside.length).toBeGreaterThan(0);
  await waitFor(async () => (await fetch(`${run.opsUrl}/readyz`)).status === 200, { what: '/readyz 200 again' });
  expect((await fetch(`${run.opsUrl}/healthz`)).status).toBe(200);
  expect(
    daemon
      .logs()
      .filter(isError)
      .map((l) => l.msg),
  ).toEqual([line.msg]);
  expect(daemon.isRunning()).toBe(true);
}
