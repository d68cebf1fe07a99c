/**
 * Cron-scheduled housekeeping through BullMQ job schedulers: webhook reconcile (whole-record PATCH,
 * headers kept), the events pull, one run per tick with two scheduler processes, and the schedulers
 * listed with their next run.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startDaemon } from '../../src/runtime/start.js';
import { openContext } from '../../src/runtime/context.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

const WEBHOOK = 'fb000000-0000-4000-8000-000000000001';
const EVERY_SECOND = { pattern: '* * * * * *', tz: 'UTC' };
const OFF = { pattern: null, tz: 'UTC' };

let running: TestDaemon | undefined;
let source: Server | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
  await new Promise<void>((resolve) => (source === undefined ? resolve() : source.close(() => resolve())));
  source = undefined;
});

describe('scheduled housekeeping', () => {
  it('puts a drifted webhook registration back, headers included, and lists the schedulers with their next run', async () => {
    const wanted = {
      id: WEBHOOK,
      url: 'https://carrier-one.example/hooks/v2',
      headers: { authorization: 'Bearer new-token', 'x-carrier': 'one' },
      events: ['DELIVERY_STATUS_CHANGED'],
    };
    running = await startTestDaemon({
      roles: ['worker', 'scheduler'],
      settings: {
        webhook: wanted,
        schedules: {
          webhookReconcile: EVERY_SECOND,
          rescan: OFF,
          deadLetterSummary: { pattern: '0 7 * * *', tz: 'America/Sao_Paulo' },
          journeyCompact: EVERY_SECOND,
          eventsPull: { ...OFF },
        },
      },
    });
    const t = running;
    const record = () => t.sandbox.state.webhooks.get(WEBHOOK);
    await waitFor(() => record()?.url === wanted.url, { what: 'the first reconcile' });
    expect(record()).toMatchObject({ url: wanted.url, headers: wanted.headers, events: wanted.events });
    // Someone changes the registration at the API, dropping the headers.
    const drifted = record()!;
    drifted.url = 'https://elsewhere.example/hook';
    drifted.headers = null;
    await waitFor(() => record()?.url === wanted.url && record()?.headers !== null, { what: 'the drift corrected' });
    expect(record()?.headers).toEqual(wanted.headers);

    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
    try {
      const schedulers = await ctx.queues.housekeeping.getJobSchedulers(0, -1, true);
      const byId = Object.fromEntries(schedulers.map((s) => [s.key, s]));
      expect(Object.keys(byId).sort()).toEqual(['deadLetterSummary', 'journeyCompact', 'webhookReconcile']);
      expect(byId['deadLetterSummary']?.tz).toBe('America/Sao_Paulo');
      expect(byId['deadLetterSummary']?.next).toBeGreaterThan(Date.now());
      // The journeys' fold ran as a housekeeping job (nothing past the detail window here to fold).
      await waitFor(async () => (await ctx.queues.housekeeping.getCompleted(0, -1)).some((job) => job.name === 'journeyCompact'), {
        what: 'a journeyCompact job completed',
      });
      const compacted = (await ctx.queues.housekeeping.getCompleted(0, -1)).find((job) => job.name === 'journeyCompact');
      expect(compacted?.returnvalue).toMatchObject({ folded: 0, left: 0 });
    } finally {
      await ctx.closers.closeAll();
    }
  });

  it('pulls collecting events on schedule, once per tick with two scheduler processes, without sending repeats', async () => {
    const a = randomUUID();
    const hits: number[] = [];
    source = createServer((request, response) => {
      if (request.headers['authorization'] !== 'Bearer pull-secret') {
        response.writeHead(401).end();
        return;
      }
      hits.push(Date.now());
      response.writeHead(200, { 'content-type': 'application/x-ndjson' });
      response.end(`{"delivery_id":"${a}","event_at":"2026-04-01T10:00:00Z"}\n{"delivery_id":"${a}","event_at":"2026-04-01T07:00:00-03:00"}\nnot json\n`);
    });
    await new Promise<void>((resolve) => source!.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}/events`;
    running = await startTestDaemon({
      roles: ['worker', 'scheduler'],
      sandbox: { autoCreateDeliveries: true },
      env: { CARRIER_SYNC_EVENTS_PULL_TOKEN: 'Bearer pull-secret' },
      settings: {
        schedules: { eventsPull: { ...EVERY_SECOND, url, authHeader: 'authorization' }, rescan: OFF, webhookReconcile: OFF, deadLetterSummary: OFF },
      },
    });
    const t = running;
    const second = startDaemon(t.config, ['scheduler'], createLogger({ level: 'silent' }));
    await second.ready;
    try {
      await waitFor(() => hits.length >= 4, { what: 'four pulls' });
    } finally {
      await second.stop();
    }
    // Two scheduler processes, one pull per tick (every second): no more pulls than the seconds they
    // span. Counted over the span, not as the smallest gap: one tick run late (a busy test process)
    // brings two pulls close together without there being two in one tick.
    const spanSec = Math.round((hits.at(-1)! - hits[0]!) / 1000);
    expect(hits.length, `pulls at ${hits.map((at) => at - hits[0]!).join(', ')} ms`).toBeLessThanOrEqual(spanSec + 1);
    const collecting = t.sandbox.requests().filter((r) => r.endpoint === 'collecting');
    expect(collecting).toHaveLength(1);
    expect(collecting[0]?.isRepeat).not.toBe(true);
  });

  it('a pull token given as a file rewritten in place is sent from the next pull on, without a restart', async () => {
    const [oldToken, newToken] = [`Bearer old-${randomUUID()}`, `Bearer new-${randomUUID()}`];
    const dir = await mkdtemp(join(tmpdir(), 'cs-pull-token-'));
    const file = join(dir, 'events-pull-token');
    await writeFile(file, `${oldToken}\n`);
    // The daemon runs in this process: the file is named where liveSecret looks (process.env) as well as in its env.
    process.env['CARRIER_SYNC_EVENTS_PULL_TOKEN_FILE'] = file;
    const tokens: string[] = [];
    source = createServer((request, response) => {
      tokens.push(String(request.headers['authorization']));
      response.writeHead(200, { 'content-type': 'application/x-ndjson' }).end('');
    });
    await new Promise<void>((resolve) => source!.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}/events`;
    try {
      running = await startTestDaemon({
        roles: ['scheduler'],
        env: { CARRIER_SYNC_EVENTS_PULL_TOKEN_FILE: file },
        settings: {
          schedules: { eventsPull: { ...EVERY_SECOND, url, authHeader: 'authorization' }, rescan: OFF, webhookReconcile: OFF, deadLetterSummary: OFF },
        },
      });
      await waitFor(() => tokens.includes(oldToken), { what: 'a pull with the first token' });
      const inode = (await stat(file)).ino;
      await writeFile(file, `${newToken}\n`);
      expect((await stat(file)).ino, 'rewritten in place').toBe(inode);
      await waitFor(() => tokens.includes(newToken), { timeoutMs: 10_000, what: 'a pull with the new token' });
      // From then on only the new one.
      const since = tokens.indexOf(newToken);
      await waitFor(() => tokens.length >= since + 2, { timeoutMs: 10_000, what: 'the pull after it' });
      expect(tokens.slice(since).every((token) => token === newToken)).toBe(true);
    } finally {
      delete process.env['CARRIER_SYNC_EVENTS_PULL_TOKEN_FILE'];
      await rm(dir, { recursive: true, force: true });
    }
  });
});
