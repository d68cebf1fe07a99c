import { translator } from '../../src/i18n/translate.js';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { emailContentOf, parseSmtpUrl } from '../../src/notify/email.js';
import { z } from 'zod';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import { makeNotification, notificationSchema, webhookBodyOf, type Notification } from '../../src/notify/message.js';
import { retryDelayMs } from '../../src/notify/sender.js';
import { slackPayloadOf } from '../../src/notify/slack.js';
import { signatureOf } from '../../src/notify/webhook.js';

const origin = { host: 'wh-box-1', version: '0.1.0' };
const at = Date.parse('2026-11-25T08:00:00Z');

const digest: Notification = makeNotification(
  origin,
  'dead-letters',
  'digest',
  '3 items dead-lettered since 2026-11-25T07:45:00.000Z: the API refused them or their retries ran out',
  {
    total: 3,
    groups: [
      { kind: 'collecting', code: 'DELIVERY_NOT_FOUND', count: 2, sample: ['d-1', 'd-2'] },
      { kind: 'label', code: 'VALIDATION_ERROR', count: 1, sample: ['d-<3>&'] },
    ],
    overview: 'http://wh-box-1:8080/ui',
  },
  at,
);

const en = translator('en');

describe('the webhook body', () => {
  it('holds exactly the fields INTERFACE.md names', () => {
    const body = JSON.parse(webhookBodyOf(digest)) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['condition', 'state', 'summary', 'details', 'at', 'host', 'version']);
    expect(body).toMatchObject({ condition: 'dead-letters', state: 'digest', at: '2026-11-25T08:00:00.000Z', host: 'wh-box-1', version: '0.1.0' });
  });

  it('matches the documented JSON Schema, docs/notify-webhook.schema.json, which is the schema of the code', () => {
    expect(notificationSchema.parse(JSON.parse(webhookBodyOf(digest)))).toBeTruthy();
    const documented = JSON.parse(readFileSync(`${PACKAGE_ROOT}/docs/notify-webhook.schema.json`, 'utf8')) as unknown;
    expect(documented).toEqual(z.toJSONSchema(notificationSchema));
  });

  it('is signed with HMAC-SHA256 of the raw body, as sha256=<hex>', () => {
    const body = webhookBodyOf(digest);
    expect(signatureOf(body, 's3cret')).toBe(`sha256=${createHmac('sha256', 's3cret').update(Buffer.from(body, 'utf8')).digest('hex')}`);
    expect(signatureOf(body, 's3cret')).not.toBe(signatureOf(`${body} `, 's3cret'));
  });
});

describe('the Slack payload', () => {
  it('follows the documented incoming-webhook shape: text fallback, header, mrkdwn section, context', () => {
    const payload = slackPayloadOf(digest, en);
    expect(typeof payload.text).toBe('string');
    expect(payload.text.length).toBeGreaterThan(0);
    const [header, section, context] = payload.blocks;
    expect(payload.blocks).toHaveLength(3);
    expect(header).toMatchObject({ type: 'header', text: { type: 'plain_text' } });
    expect(section).toMatchObject({ type: 'section', text: { type: 'mrkdwn' } });
    expect(context).toMatchObject({ type: 'context' });
    if (header?.type !== 'header' || section?.type !== 'section' || context?.type !== 'context') throw new Error('unexpected block order');
    expect(header.text.text.length).toBeLessThanOrEqual(150);
    expect(section.text.text.length).toBeLessThanOrEqual(3000);
    expect(context.elements.length).toBeLessThanOrEqual(10);
    // mrkdwn control characters escaped; the overview as a Slack link.
    expect(section.text.text).toContain('d-&lt;3&gt;&amp;');
    expect(section.text.text).toContain('<http://wh-box-1:8080/ui|open the overview>');
    expect(section.text.text).toContain('collecting DELIVERY_NOT_FOUND × 2: d-1, d-2');
  });

  it('cuts a long summary to the header limit', () => {
    const long = makeNotification(origin, 'backlog-stuck', 'firing', 'x'.repeat(400), {}, at);
    const header = slackPayloadOf(long, en).blocks[0];
    expect(header?.type === 'header' ? header.text.text.length : 0).toBe(150);
  });
});

describe('the e-mail', () => {
  it('has the state and condition in the subject and the details in the body', () => {
    const mail = emailContentOf(digest, en);
    expect(mail.subject).toBe(`carrier-sync [DIGEST] dead-letters: ${digest.summary}`);
    expect(mail.text).toContain('  - collecting DELIVERY_NOT_FOUND × 2: d-1, d-2');
    expect(mail.text).toContain('overview: http://wh-box-1:8080/ui');
  });

  it('speaks CARRIER_SYNC_LANG: state word, footer, detail names and the overview link in pt-BR; condition and codes as they are', () => {
    const pt = translator('pt-BR');
    const mail = emailContentOf(digest, pt);
    expect(mail.subject).toBe(`carrier-sync [RESUMO] dead-letters: ${digest.summary}`);
    expect(mail.text).toContain('  - collecting DELIVERY_NOT_FOUND × 2: d-1, d-2');
    // The details' names are Portuguese in the text; the webhook's JSON keeps its keys.
    expect(mail.text).toContain('\ntotal: 3\ngrupos:\n');
    expect(mail.text).toContain('\npainel: http://wh-box-1:8080/ui\n');
    expect(JSON.parse(webhookBodyOf(digest)).details).toHaveProperty('groups');
    expect(mail.text).toContain(`em ${digest.at} · host wh-box-1 · carrier-sync`);
    const section = slackPayloadOf(digest, pt).blocks[1];
    expect(section?.type === 'section' ? section.text.text : '').toContain('<http://wh-box-1:8080/ui|abrir o painel>');
  });

  it('reads the SMTP URL with its default ports', () => {
    expect(parseSmtpUrl('smtp://me%40x.org:p%3Ass@mail.example.org')).toEqual({
      host: 'mail.example.org',
      port: 587,
      isTls: false,
      user: 'me@x.org',
      password: 'p:ss',
    });
    expect(parseSmtpUrl('smtps://mail.example.org').port).toBe(465);
    expect(() => parseSmtpUrl('http://x')).toThrow(/smtp:\/\//);
  });
});

describe('retries', () => {
  it('wait 1 s doubling up to 5 min', () => {
    const policy = { maxAttempts: 10, baseMs: 1000, maxMs: 300_000 };
    expect([1, 2, 3, 4, 9, 10].map((n) => retryDelayMs(policy, n))).toEqual([1000, 2000, 4000, 8000, 256_000, 300_000]);
  });
});

describe('notification config', () => {
  it('turns channels on from the environment and _FILE variants, thresholds from the files', () => {
    const files: Record<string, string> = { '/run/secrets/slack': 'https://hooks.slack.com/services/T0/B0/XYZ\n' };
    const config = loadConfig({
      env: {
        CARRIER_SYNC_NOTIFY_WEBHOOK_URL: 'https://ops.example.org/hooks/cs',
        CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET: 'whsec',
        CARRIER_SYNC_NOTIFY_SLACK_URL_FILE: '/run/secrets/slack',
        CARRIER_SYNC_NOTIFY_SMTP_URL: 'smtp://u:p@mail.example.org:587',
        CARRIER_SYNC_NOTIFY_EMAIL_FROM: 'carrier-sync@example.org',
        CARRIER_SYNC_NOTIFY_EMAIL_TO: 'ops@example.org, boss@example.org',
        CARRIER_SYNC_NOTIFY_DIGEST_MINUTES: '0.5',
      },
      readFile: (path) => files[path] ?? readDefault(path),
    });
    expect(config.notify.webhook).toEqual({ url: 'https://ops.example.org/hooks/cs', secret: 'whsec' });
    expect(config.notify.slack.url).toBe('https://hooks.slack.com/services/T0/B0/XYZ');
    expect(config.notify.email.to).toEqual(['ops@example.org', 'boss@example.org']);
    expect(config.notify.digestMinutes).toBe(0.5);
    expect(config.notify.backlogStuckMinutes).toBe(15);
  });

  it('has every channel off by default', () => {
    const { notify } = loadConfig({ env: {} });
    expect([notify.webhook.url, notify.slack.url, notify.email.smtpUrl]).toEqual([null, null, null]);
    expect(notify.digestMinutes).toBe(15);
  });

  it('wants a sender and recipients with an SMTP URL, and never repeats the URL in the error', () => {
    let message = '';
    try {
      loadConfig({ env: { CARRIER_SYNC_NOTIFY_SMTP_URL: 'smtp://user:hunter2@mail.example.org' } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/CARRIER_SYNC_NOTIFY_EMAIL_FROM and CARRIER_SYNC_NOTIFY_EMAIL_TO are required/);
    expect(message).not.toContain('hunter2');
  });

  it('refuses a channel secret in a config file', () => {
    const files: Record<string, string> = { '/etc/cs.yaml': 'notify:\n  slack:\n    url: https://hooks.slack.com/services/T0/B0/XYZ\n' };
    expect(() => loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile: (path) => files[path] ?? readDefault(path) })).toThrow(
      /notify\.slack\.url is a secret; set CARRIER_SYNC_NOTIFY_SLACK_URL/,
    );
  });
});

function readDefault(path: string): string {
  return readFileSync(path, 'utf8');
}
