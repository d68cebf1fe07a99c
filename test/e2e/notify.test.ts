/**
 * Notifications end to end: two daemon processes (every role, so two schedulers) on one Redis and
 * spool, with the webhook, Slack and e-mail channels pointed at real receivers in this test.
 * A 401 window on the sandbox makes exactly one "firing" and one "resolved" per channel; fifty dead
 * letters within a digest period make one digest. `notify test` answers per channel.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { notificationSchema } from '../../src/notify/message.js';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, type E2eEnv } from '../support/e2e-env.js';
import { startHttpReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from '../support/notify-receivers.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';

interface Receivers {
  webhook: HttpReceiver;
  slack: HttpReceiver;
  smtp: SmtpReceiver;
  env: Record<string, string>;
}

let env: E2eEnv | undefined;
let receivers: Receivers | undefined;
let ownRedis: OwnRedis | undefined;
afterEach(async () => {
  await killAllDaemons();
  await ownRedis?.close();
  ownRedis = undefined;
  await env?.close();
  env = undefined;
  if (receivers !== undefined) await Promise.all([receivers.webhook.close(), receivers.slack.close(), receivers.smtp.close()]);
  receivers = undefined;
});

const SECRET = 'e2e-webhook-secret';
const NOTIFY_SETTINGS = { notify: { checkIntervalMs: 200, email: { rejectUnauthorized: false } }, delivery: { authProbeMs: 500 } };

async function startReceivers(): Promise<Receivers> {
  const [webhook, slack, smtp] = await Promise.all([
    startHttpReceiver({ secret: SECRET }),
    startHttpReceiver({ path: '/services/T0/B0/e2e' }),
    startSmtpReceiver({ user: 'notifier', password: 'e2e-smtp-pass' }),
  ]);
  return {
    webhook,
    slack,
    smtp,
    env: {
      CARRIER_SYNC_NOTIFY_WEBHOOK_URL: webhook.url,
      CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET: SECRET,
      CARRIER_SYNC_NOTIFY_SLACK_URL: slack.url,
      CARRIER_SYNC_NOTIFY_SMTP_URL: smtp.url,
      CARRIER_SYNC_NOTIFY_EMAIL_FROM: 'carrier-sync@wh.example',
      CARRIER_SYNC_NOTIFY_EMAIL_TO: 'ops@wh.example',
    },
  };
}

async function startTwo(e: E2eEnv, extra: Record<string, string>): Promise<DaemonProcess[]> {
  const daemons = [1, 2].map(() => spawnDaemon({ ...e.env, ...extra }, { args: e.args('start') }));
  await Promise.all(daemons.map((daemon) => waitUntilStarted(daemon)));
  return daemons;
}

/** What each channel received, as `condition/state` strings. */
function seen(r: Receivers, condition: string): Record<string, string[]> {
  const webhook = r.webhook.received.map((d) => d.json as { condition: string; state: string }).filter((m) => m.condition === condition);
  const slack = r.slack.received.map((d) => (d.json as { text: string }).text).filter((text) => text.includes(` ${condition}:`));
  const email = r.smtp.mails.map((m) => m.headers['subject'] ?? '').filter((subject) => subject.includes(` ${condition}:`));
  return {
    webhook: webhook.map((m) => m.state),
    slack: slack.map((text) => /\[(\w+)\]/.exec(text)?.[1]?.toLowerCase() ?? '?'),
    email: email.map((subject) => /\[(\w+)\]/.exec(subject)?.[1]?.toLowerCase() ?? '?'),
  };
}

async function archivedCount(e: E2eEnv, kind: string, extension: string): Promise<number> {
  try {
    return (await readdir(join(e.spool, 'archive', kind), { recursive: true })).filter((f) => String(f).endsWith(extension)).length;
  } catch {
    return 0;
  }
}

describe('notifications with two daemon processes', () => {
  it('a 401 window sends exactly one "firing" and one "resolved" per channel', async () => {
    receivers = await startReceivers();
    const r = receivers;
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true }, settings: NOTIFY_SETTINGS });
    const e = env;
    const daemons = await startTwo(e, r.env);
    // The 401 window opens once both run, and closes once every channel told of it.
    e.sandbox.setFaults({ unauthorizedUntil: Date.now() + 120_000 });
    const ids = Array.from({ length: 3 }, () => randomUUID());
    for (const id of ids) await dropFile(join(e.spool, 'labels'), `${id}.pdf`, await makePdf(id));
    await waitFor(() => Object.values(seen(r, 'api-key-refused')).every((states) => states.includes('firing')), {
      timeoutMs: 40_000,
      what: 'the firing message on every channel',
    });
    e.sandbox.setFaults({ unauthorizedUntil: Date.now() - 1 });
    await waitFor(() => Object.values(seen(r, 'api-key-refused')).every((states) => states.includes('resolved')), {
      timeoutMs: 40_000,
      what: 'the resolved message on every channel',
    });
    await waitFor(async () => (await archivedCount(e, 'labels', '.pdf')) >= ids.length, {
      timeoutMs: 30_000,
      what: 'the labels archived after the key works again',
    });
    // A few more checks of both schedulers pass: nothing more may come (bounded negative check).
    const until = Date.now() + 1500;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen(r, 'api-key-refused')).toEqual({ webhook: ['firing', 'resolved'], slack: ['firing', 'resolved'], email: ['firing', 'resolved'] });
    expect(r.webhook.received.every((d) => d.isSignatureValid === true)).toBe(true);
    for (const delivery of r.webhook.received) notificationSchema.parse(delivery.json);
    const firing = r.webhook.received
      .map((d) => d.json as Record<string, unknown>)
      .find((m) => m['condition'] === 'api-key-refused' && m['state'] === 'firing');
    expect(firing).toMatchObject({
      summary: expect.stringContaining('401') as unknown,
      version: expect.any(String) as unknown,
      host: expect.any(String) as unknown,
    });
    expect(r.smtp.mails.every((m) => m.isSecure && m.user === 'notifier')).toBe(true);

    // The overview lists the channels with their last message; /metrics counts what was sent.
    const started = daemons[0]!.logs().find((line) => line.msg === 'carrier-sync started');
    const opsUrl = String(started?.['opsUrl']);
    const overview = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as {
      details: { notifications: Array<{ channel: string; target: string; lastSent: { condition: string } | null }> };
    };
    expect(overview.details.notifications.map((c) => c.channel)).toEqual(['email', 'slack', 'webhook']);
    expect(overview.details.notifications.every((c) => c.lastSent !== null)).toBe(true);
    expect(JSON.stringify(overview)).not.toContain('e2e-smtp-pass');
    const metrics = await (await fetch(`${opsUrl}/metrics`)).text();
    // No secret in any log line of either daemon.
    const logText = daemons.map((d) => d.stderrLines.join('\n')).join('\n');
    expect(logText).toContain('notifications on');
    for (const secret of [SECRET, 'e2e-smtp-pass', '/services/T0/B0/e2e']) expect(logText).not.toContain(secret);
    for (const channel of ['webhook', 'slack', 'email'])
      expect(metrics).toMatch(new RegExp(`^carrier_sync_notifications_total\\{channel="${channel}",result="sent"\\} [2-9]`, 'm'));
  });

  it('fifty dead letters within a digest period make one digest per channel; two refused files another', async () => {
    receivers = await startReceivers();
    const r = receivers;
    env = await createE2eEnv({
      settings: { ...NOTIFY_SETTINGS, notify: { ...NOTIFY_SETTINGS.notify, digestMinutes: 0.2 }, delivery: { notFoundAttempts: 1 } },
    });
    const e = env;
    await startTwo(e, r.env);
    const ids = Array.from({ length: 50 }, () => randomUUID());
    const lines = ids.map((id, i) => JSON.stringify({ delivery_id: id, event_at: new Date(Date.UTC(2026, 10, 24, 8, 0, i)).toISOString() }));
    await dropFile(join(e.spool, 'events'), 'unknown-deliveries.ndjson', `${lines.join('\n')}\n`);
    // A file of the second one's name is in failed/ already: it lands there as NOT-A-PDF-2~2.pdf, and the digest says so (issue 45).
    await mkdir(join(e.spool, 'failed', 'labels'), { recursive: true });
    await writeFile(join(e.spool, 'failed', 'labels', 'NOT-A-PDF-2.pdf'), 'an earlier file of that name');
    await dropFile(join(e.spool, 'labels'), 'NOT-A-PDF-1.pdf', 'not a pdf');
    await dropFile(join(e.spool, 'labels'), 'NOT-A-PDF-2.pdf', 'not a pdf either');

    await waitFor(() => Object.values(seen(r, 'dead-letters')).every((states) => states.length >= 1), { timeoutMs: 40_000, what: 'a digest on every channel' });
    await waitFor(() => Object.values(seen(r, 'refused-files')).every((states) => states.length >= 1), {
      timeoutMs: 20_000,
      what: 'a refused-files digest on every channel',
    });
    const until = Date.now() + 1500;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen(r, 'dead-letters')).toEqual({ webhook: ['digest'], slack: ['digest'], email: ['digest'] });
    expect(seen(r, 'refused-files')).toEqual({ webhook: ['digest'], slack: ['digest'], email: ['digest'] });
    const refused = r.webhook.received
      .map((d) => d.json as { condition: string; details: Record<string, unknown> })
      .find((m) => m.condition === 'refused-files');
    expect(refused?.details).toMatchObject({ total: 2, groups: [{ kind: 'labels', count: 2 }] });
    expect(((refused?.details['groups'] as Array<{ sample: string[] }>)[0]?.sample ?? []).sort()).toEqual(['NOT-A-PDF-1.pdf', 'NOT-A-PDF-2~2.pdf']);
    expect(await readFile(join(e.spool, 'failed', 'labels', 'NOT-A-PDF-2~2.pdf'), 'utf8')).toBe('not a pdf either');
    // The ops server listens on loopback only: no link a reader elsewhere could not open.
    expect(refused?.details['overview']).toBeUndefined();
    const digest = r.webhook.received.map((d) => d.json as { condition: string; details: Record<string, unknown> }).find((m) => m.condition === 'dead-letters');
    expect(digest?.details).toMatchObject({ total: 50, groups: [{ kind: 'collecting', code: 'DELIVERY_NOT_FOUND', count: 50 }] });
    const sample = (digest?.details['groups'] as Array<{ sample: string[] }>)[0]?.sample ?? [];
    expect(sample).toHaveLength(5);
    for (const id of sample) expect(ids).toContain(id);
  });

  it('a Redis outage past the threshold is told once when it passes the threshold and once when Redis is back', async () => {
    receivers = await startReceivers();
    const r = receivers;
    ownRedis = await startOwnRedis();
    env = await createE2eEnv({ settings: { notify: { ...NOTIFY_SETTINGS.notify, redisUnreachableSec: 0.1 } } });
    const e = env;
    const daemon = spawnDaemon({ ...e.env, ...r.env, REDIS_URL: ownRedis.url }, { args: e.args('start') });
    await waitUntilStarted(daemon);
    await ownRedis.restart();
    await waitFor(() => Object.values(seen(r, 'redis-unreachable')).every((states) => states.includes('resolved')), {
      timeoutMs: 30_000,
      what: 'the resolved message on every channel',
    });
    expect(seen(r, 'redis-unreachable')).toEqual({ webhook: ['firing', 'resolved'], slack: ['firing', 'resolved'], email: ['firing', 'resolved'] });
    const resolved = r.webhook.received
      .map((d) => d.json as { condition: string; state: string; details: Record<string, unknown> })
      .find((m) => m.condition === 'redis-unreachable' && m.state === 'resolved');
    expect(resolved?.details).toMatchObject({ pid: daemon.child.pid, lastedSec: expect.any(Number) as unknown });
  });

  it('`notify test` sends through each channel and says what each answered; exit 1 when one fails', async () => {
    receivers = await startReceivers();
    const r = receivers;
    env = await createE2eEnv({ settings: NOTIFY_SETTINGS });
    const e = env;
    const ok = await runCli(e.args('notify', 'test'), { env: { ...e.env, ...r.env } });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^webhook +ok +http:\/\/127\.0\.0\.1:\d+ +HTTP 200 ok$/m);
    expect(ok.stdout).toMatch(/^slack +ok +http:\/\/127\.0\.0\.1:\d+ +HTTP 200 ok$/m);
    expect(ok.stdout).toMatch(/^email +ok +smtp:\/\/127\.0\.0\.1:\d+ +250 .*queued as test$/m);
    expect(r.webhook.received.map((d) => (d.json as { condition: string }).condition)).toEqual(['test']);
    expect(r.smtp.mails).toHaveLength(1);
    expect(ok.stdout + ok.stderr).not.toContain('e2e-smtp-pass');
    expect(ok.stdout + ok.stderr).not.toContain('/services/T0/B0/e2e');

    r.slack.answerNext({ status: 404, body: 'no_service' });
    const one = await runCli(e.args('notify', 'test', '--channel', 'slack'), { env: { ...e.env, ...r.env } });
    expect(one.code).toBe(1);
    expect(one.stdout.trim()).toMatch(/^slack +FAILED +http:\/\/127\.0\.0\.1:\d+ +HTTP 404 from http:\/\/127\.0\.0\.1:\d+: no_service$/);

    const bad = await runCli(e.args('notify', 'test', '--channel', 'pager'), { env: { ...e.env, ...r.env } });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});
