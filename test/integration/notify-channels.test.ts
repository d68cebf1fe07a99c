/**
 * The channels against real receivers: a local HTTP server checking the webhook signature and the
 * Slack payload, and a real SMTP server (smtp-server) with STARTTLS and password authentication.
 * The sender's retries run against a receiver that refuses first, then accepts.
 */
import { translator } from '../../src/i18n/translate.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createEmailChannel } from '../../src/notify/email.js';
import { makeNotification } from '../../src/notify/message.js';
import { createSender, type SendRecord } from '../../src/notify/sender.js';
import { createSlackChannel } from '../../src/notify/slack.js';
import { createWebhookChannel } from '../../src/notify/webhook.js';
import { startHttpReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from '../support/notify-receivers.js';
import { waitFor } from '../support/wait.js';

const origin = { host: 'wh-box-1', version: '0.1.0' };
const paused = makeNotification(
  origin,
  'api-key-refused',
  'firing',
  'The API refuses our key (401): sending is paused until it accepts it again',
  { endpoint: 'label', reason: 'invalid key', since: '2026-11-25T08:00:00.000Z' },
  Date.parse('2026-11-25T08:00:01Z'),
);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function http(options: { secret?: string; path?: string } = {}): Promise<HttpReceiver> {
  const receiver = await startHttpReceiver(options);
  closers.push(() => receiver.close());
  return receiver;
}

async function smtp(user: string, password: string): Promise<SmtpReceiver> {
  const receiver = await startSmtpReceiver({ user, password });
  closers.push(() => receiver.close());
  return receiver;
}

function captureLogs(): { lines: Array<Record<string, unknown>>; logger: ReturnType<typeof createLogger>; text(): string } {
  const lines: Array<Record<string, unknown>> = [];
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      text += chunk.toString();
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { lines, logger: createLogger({ level: 'debug', destination }), text: () => text };
}

describe('the webhook channel', () => {
  it('POSTs the JSON body with a signature the receiver verifies over the raw bytes', async () => {
    const receiver = await http({ secret: 'whsec-test' });
    const channel = createWebhookChannel({ url: receiver.url, secret: 'whsec-test', timeoutMs: 5000 });
    const answer = await channel.send(paused);
    expect(answer).toBe('HTTP 200 ok');
    expect(receiver.received).toHaveLength(1);
    const [delivery] = receiver.received;
    expect(delivery?.isSignatureValid).toBe(true);
    expect(delivery?.headers['content-type']).toBe('application/json');
    expect(delivery?.json).toEqual({
      condition: 'api-key-refused',
      state: 'firing',
      summary: paused.summary,
      details: paused.details,
      at: '2026-11-25T08:00:01.000Z',
      host: 'wh-box-1',
      version: '0.1.0',
    });
  });

  it('fails the signature check when signed with another secret', async () => {
    const receiver = await http({ secret: 'the-right-one' });
    await createWebhookChannel({ url: receiver.url, secret: 'a-wrong-one', timeoutMs: 5000 }).send(paused);
    expect(receiver.received[0]?.isSignatureValid).toBe(false);
  });

  it('is retried with backoff through the sender, logged once per failure streak, and counted', async () => {
    const receiver = await http({ secret: 'whsec-test' });
    receiver.answerNext({ status: 503, body: 'busy' }, { status: 500 }, { status: 502 });
    const logs = captureLogs();
    const records: SendRecord[] = [];
    const sender = createSender({
      channels: [createWebhookChannel({ url: receiver.url, secret: 'whsec-test', timeoutMs: 5000 })],
      policy: { maxAttempts: 6, baseMs: 20, maxMs: 100 },
      logger: logs.logger,
      onResult: (record) => records.push(record),
    });
    closers.push(() => sender.close());
    sender.send(paused);
    await waitFor(() => receiver.received.length === 1, { timeoutMs: 5000, what: 'the delivery after three refusals' });
    await sender.idle();
    expect(records.map((r) => r.result)).toEqual(['failed', 'failed', 'failed', 'sent']);
    expect(records[0]?.answer).toMatch(/^HTTP 503 from http:\/\/127\.0\.0\.1:\d+: busy$/);
    expect(logs.lines.filter((l) => l['msg'] === 'notification channel failed; retrying with backoff')).toHaveLength(1);
    expect(logs.lines.filter((l) => l['msg'] === 'notification channel works again')).toHaveLength(1);
  });

  it('gives up after maxAttempts, without the URL path (a token) in logs or answers', async () => {
    const receiver = await http({ path: '/hooks/SECRET-TOKEN-123' });
    receiver.answerNext(...Array.from({ length: 3 }, () => ({ status: 404 })));
    const logs = captureLogs();
    const records: SendRecord[] = [];
    const sender = createSender({
      channels: [createWebhookChannel({ url: receiver.url, secret: null, timeoutMs: 5000 })],
      policy: { maxAttempts: 3, baseMs: 10, maxMs: 20 },
      logger: logs.logger,
      onResult: (record) => records.push(record),
    });
    closers.push(() => sender.close());
    sender.send(paused);
    await waitFor(() => records.length === 3, { timeoutMs: 5000, what: 'three failed attempts' });
    await sender.idle();
    expect(receiver.received).toHaveLength(0);
    expect(logs.lines.filter((l) => l['msg'] === 'notification dropped: the channel kept failing')).toHaveLength(1);
    expect(logs.text()).not.toContain('SECRET-TOKEN-123');
    expect(JSON.stringify(records)).not.toContain('SECRET-TOKEN-123');
  });
});

describe('the sender', () => {
  it('returns at once while a channel hangs; the hung attempt ends at the send timeout and is retried', async () => {
    const hung: Array<() => void> = [];
    const server = createServer((_req, res) => hung.push(() => res.destroy()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          for (const end of hung) end();
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const records: SendRecord[] = [];
    const sender = createSender({
      channels: [createWebhookChannel({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, secret: null, timeoutMs: 200 })],
      policy: { maxAttempts: 2, baseMs: 10, maxMs: 10 },
      logger: captureLogs().logger,
      onResult: (record) => records.push(record),
    });
    closers.push(() => sender.close());
    sender.send(paused);
    // send() queued the message and returned: nothing has been answered yet.
    expect(records).toEqual([]);
    await waitFor(() => hung.length === 1, { timeoutMs: 5000, what: 'the request to reach the hanging receiver' });
    await waitFor(() => records.length === 2, { timeoutMs: 5000, what: 'two timed-out attempts' });
    expect(records.map((r) => r.result)).toEqual(['failed', 'failed']);
    expect(records[0]?.answer).toMatch(/^no answer from http:\/\/127\.0\.0\.1:\d+: /);
  });
});

describe('the sender at shutdown', () => {
  it('cuts a hanging attempt short instead of waiting for the send timeout', async () => {
    const hung: Array<() => void> = [];
    const server = createServer((_req, res) => hung.push(() => res.destroy()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          for (const end of hung) end();
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const logs = captureLogs();
    const sender = createSender({
      channels: [createWebhookChannel({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, secret: null, timeoutMs: 60_000 })],
      policy: { maxAttempts: 5, baseMs: 60_000, maxMs: 60_000 },
      logger: logs.logger,
    });
    sender.send(paused);
    sender.send(paused);
    await waitFor(() => hung.length === 1, { timeoutMs: 5000, what: 'the request to reach the hanging receiver' });
    const bound = new Promise<'too slow'>((resolve) => setTimeout(() => resolve('too slow'), 5000).unref());
    expect(await Promise.race([sender.close().then(() => 'closed' as const), bound])).toBe('closed');
    expect(logs.lines.map((l) => l['msg'])).toEqual(
      expect.arrayContaining(['notification cut short by the shutdown', 'notifications not sent before shutdown']),
    );
  });
});

describe('the Slack channel', () => {
  it("sends Slack's incoming-webhook shape and reads Slack's `ok`", async () => {
    const receiver = await http({ path: '/services/T000/B000/XXXX' });
    const answer = await createSlackChannel({ url: receiver.url, timeoutMs: 5000, t: translator('en') }).send(paused);
    expect(answer).toBe('HTTP 200 ok');
    const body = receiver.received[0]?.json as { text: string; blocks: Array<{ type: string }> };
    expect(Object.keys(body).sort()).toEqual(['blocks', 'text']);
    expect(body.text).toContain('[FIRING] api-key-refused');
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context']);
  });

  it("reports Slack's refusal (e.g. 404 no_service) as the answer", async () => {
    const receiver = await http({ path: '/services/T000/B000/GONE' });
    receiver.answerNext({ status: 404, body: 'no_service' });
    await expect(createSlackChannel({ url: receiver.url, timeoutMs: 5000, t: translator('en') }).send(paused)).rejects.toThrow(
      /^HTTP 404 from http:\/\/127\.0\.0\.1:\d+: no_service$/,
    );
  });
});

describe('the e-mail channel', () => {
  const email = (to: string[]) => ({ from: 'carrier-sync@wh.example', to, requireTls: true, rejectUnauthorized: false });

  it('logs in over STARTTLS and delivers the message to every recipient', async () => {
    const server = await smtp('notifier', 'pa:ss w0rd');
    const channel = createEmailChannel({ email: email(['ops@wh.example', 'boss@wh.example']), smtpUrl: server.url, timeoutMs: 5000, t: translator('en') });
    closers.push(() => channel.close());
    const answer = await channel.send(paused);
    expect(answer).toMatch(/^250 .*queued as test/);
    expect(server.mails).toHaveLength(1);
    const [mail] = server.mails;
    expect(mail).toMatchObject({ user: 'notifier', from: 'carrier-sync@wh.example', to: ['ops@wh.example', 'boss@wh.example'], isSecure: true });
    expect(mail?.headers['subject']).toBe(`carrier-sync [FIRING] api-key-refused: ${paused.summary}`);
    expect(mail?.text).toContain('endpoint: label');
    expect(mail?.text).toContain('reason: invalid key');
    expect(mail?.text).toContain('host wh-box-1');
  });

  it('fails with the server answer, never the password, when the login is refused', async () => {
    const server = await smtp('notifier', 'right-password');
    const wrong = server.url.replace('right-password', 'wrong-pass-XYZ');
    const channel = createEmailChannel({ email: email(['ops@wh.example']), smtpUrl: wrong, timeoutMs: 5000, t: translator('en') });
    closers.push(() => channel.close());
    const failure = await channel.send(paused).then(
      () => null,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(/^SMTP 127\.0\.0\.1:\d+: .*535/);
    expect(failure?.message).not.toContain('wrong-pass-XYZ');
    expect(server.refusedLogins).toBe(1);
    expect(server.mails).toHaveLength(0);
  });

  it('refuses a self-signed certificate unless told otherwise', async () => {
    const server = await smtp('notifier', 'pw');
    const channel = createEmailChannel({
      email: { ...email(['ops@wh.example']), rejectUnauthorized: true },
      smtpUrl: server.url,
      timeoutMs: 5000,
      t: translator('en'),
    });
    closers.push(() => channel.close());
    await expect(channel.send(paused)).rejects.toThrow(/certificate/i);
    expect(server.mails).toHaveLength(0);
  });
});
