/**
 * A refused key fixed without a restart (issue 45): the daemon reads its key from the file that
 * CARRIER_SYNC_CARRIER_KEY_FILE names; the API refuses it (401) and sending pauses; `resume` with the
 * key still wrong says so (exit 1) instead of claiming a resume; the right key written into the same
 * file (in place, or as a Kubernetes Secret swaps it: a new folder behind the `..data` symlink,
 * renamed over) is picked up and the label is accepted, without a restart and without `resume`.
 * Neither key ever shows in the daemon's output or the command's. The notification channels given
 * as files follow them too: a message after the rotation reaches the new receivers, signed with the
 * new webhook secret.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startHttpReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from '../support/notify-receivers.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const WRONG_KEY = `wrong-${randomUUID()}`;

let t: E2eEnv | undefined;
const receivers: Array<HttpReceiver | SmtpReceiver> = [];
afterEach(async () => {
  await killAllDaemons();
  await t?.close();
  t = undefined;
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/** The env with the key given as a file (the path `keyPath`), holding the wrong key. */
async function setUp(keyPath: (dir: string) => Promise<string>): Promise<{ env: E2eEnv; daemonEnv: Record<string, string>; file: string }> {
  t = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
  const file = await keyPath(t.dir);
  const daemonEnv: Record<string, string> = { ...t.env, CARRIER_SYNC_CARRIER_KEY_FILE: file };
  delete daemonEnv['CARRIER_SYNC_CARRIER_KEY'];
  return { env: t, daemonEnv, file };
}

/** Started with the wrong key, a label dropped: refused (401), sending paused. */
async function pausedOnWrongKey(env: E2eEnv, daemonEnv: Record<string, string>): Promise<DaemonProcess> {
  const daemon = spawnDaemon(daemonEnv, { args: env.args('start') });
  await waitUntilStarted(daemon);
  await dropFile(join(env.spool, 'labels'), `${randomUUID()}.pdf`, await makePdf('rotated key'));
  await daemon.waitForLog((line) => String(line.msg).startsWith('API refused the key (401)'), { timeoutMs: 20_000, what: 'the 401 pause' });
  expect(env.sandbox.requests().filter((request) => request.status === 401).length).toBeGreaterThan(0);
  return daemon;
}

async function expectAcceptedWithoutRestart(env: E2eEnv, daemon: DaemonProcess, fixedAt: number): Promise<void> {
  await waitFor(async () => (await listFiles(join(env.spool, 'archive', 'labels'))).length === 1, {
    timeoutMs: 20_000,
    what: 'the label to be accepted and archived with the new key',
  });
  const accepted = env.sandbox.requests().find((request) => request.endpoint === 'label' && request.status === 200);
  expect(accepted, 'the API accepted the label').toBeDefined();
  // Well inside the probe's backoff (10 s, then 20 s): the change itself was probed.
  expect(accepted!.at - fixedAt, 'accepted within seconds of the fix').toBeLessThan(8000);
  expect(daemon.isRunning(), 'no restart').toBe(true);
  expectNoKeyIn([...daemon.stderrLines, ...daemon.stdoutLines].join('\n'), env);
  daemon.kill('SIGTERM');
  expect(await daemon.exited).toEqual({ code: 0, signal: null });
}

function expectNoKeyIn(text: string, env: E2eEnv): void {
  expect(text.includes(env.carrierKey), 'the right key is never shown').toBe(false);
  expect(text.includes(WRONG_KEY), 'the wrong key is never shown').toBe(false);
}

describe('a key file fixed while paused on 401', () => {
  it('in place: `resume` with the key still wrong says so; the right key written into the file resumes by itself', { timeout: 90_000 }, async () => {
    const { env, daemonEnv, file } = await setUp(async (dir) => {
      const path = join(dir, 'carrier-key');
      await writeFile(path, `${WRONG_KEY}\n`);
      return path;
    });
    const daemon = await pausedOnWrongKey(env, daemonEnv);

    const resumed = await runCli(env.args('resume'), { env: daemonEnv, timeoutMs: 30_000 });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(1);
    expect(resumed.stdout).toContain('the API still refuses the key (HTTP 401): sending stays paused');
    expect(resumed.stdout).toContain('CARRIER_SYNC_CARRIER_KEY_FILE');
    expect(resumed.stdout).not.toContain('queues resumed');
    expectNoKeyIn(resumed.stdout + resumed.stderr, env);

    const fixedAt = Date.now();
    await writeFile(file, `${env.carrierKey}\n`);
    await expectAcceptedWithoutRestart(env, daemon, fixedAt);
  });

  it('as a Kubernetes Secret rotates: a new folder behind `..data`, renamed over it', { timeout: 90_000 }, async () => {
    let secretDir = '';
    const { env, daemonEnv } = await setUp(async (dir) => {
      secretDir = join(dir, 'secret');
      await mkdir(join(secretDir, '..2026_01'), { recursive: true });
      await writeFile(join(secretDir, '..2026_01', 'carrier-key'), WRONG_KEY);
      await symlink('..2026_01', join(secretDir, '..data'));
      await symlink(join('..data', 'carrier-key'), join(secretDir, 'carrier-key'));
      return join(secretDir, 'carrier-key');
    });
    const daemon = await pausedOnWrongKey(env, daemonEnv);

    const fixedAt = Date.now();
    await mkdir(join(secretDir, '..2026_02'));
    await writeFile(join(secretDir, '..2026_02', 'carrier-key'), env.carrierKey);
    await symlink('..2026_02', join(secretDir, '..data_tmp'));
    await rename(join(secretDir, '..data_tmp'), join(secretDir, '..data'));
    await expectAcceptedWithoutRestart(env, daemon, fixedAt);
  });
});

describe('the ops secrets given as files', () => {
  it('a new UI password and ingest token written into their files are asked for without a restart', { timeout: 60_000 }, async () => {
    t = await createE2eEnv();
    const env = t;
    const [uiFile, tokenFile] = [join(env.dir, 'ui-password'), join(env.dir, 'ingest-token')];
    const [oldPassword, newPassword, oldToken, newToken] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await writeFile(uiFile, oldPassword);
    await writeFile(tokenFile, oldToken);
    const daemon = spawnDaemon({ ...env.env, CARRIER_SYNC_UI_PASSWORD_FILE: uiFile, CARRIER_SYNC_INGEST_TOKEN_FILE: tokenFile }, { args: env.args('start') });
    const started = await daemon.waitForLog((line) => line.msg === 'carrier-sync started', { timeoutMs: 30_000, what: 'the start' });
    const url = String(started['opsUrl']);
    const ui = async (password: string): Promise<number> =>
      (await fetch(`${url}/ui`, { headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` } })).status;
    // An empty batch: the token is checked before the body is read.
    const ingest = async (token: string): Promise<number> =>
      (await fetch(`${url}/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' }, body: '' }))
        .status;
    expect(await ui(oldPassword)).toBe(200);
    expect(await ui(newPassword)).toBe(401);
    expect(await ingest(oldToken)).not.toBe(401);

    await writeFile(uiFile, newPassword);
    await writeFile(tokenFile, newToken);
    await waitFor(async () => (await ui(newPassword)) === 200 && (await ingest(newToken)) !== 401, {
      timeoutMs: 10_000,
      what: 'the new secrets to be asked for',
    });
    expect(await ui(oldPassword)).toBe(401);
    expect(await ingest(oldToken)).toBe(401);
    const output = [...daemon.stderrLines, ...daemon.stdoutLines].join('\n');
    for (const secret of [oldPassword, newPassword, oldToken, newToken]) expect(output.includes(secret)).toBe(false);
  });
});

/** One set of notification receivers: a webhook checking signatures with `secret`, a Slack endpoint, an SMTP server with `password`. */
async function notifyReceivers(
  secret: string,
  password: string,
  slackPath: string,
): Promise<{ webhook: HttpReceiver; slack: HttpReceiver; smtp: SmtpReceiver }> {
  const [webhook, slack, smtp] = await Promise.all([
    startHttpReceiver({ secret }),
    startHttpReceiver({ path: slackPath }),
    startSmtpReceiver({ user: 'notifier', password }),
  ]);
  receivers.push(webhook, slack, smtp);
  return { webhook, slack, smtp };
}

/** The states of `api-key-refused` each channel of `r` received. */
function refusedStates(r: { webhook: HttpReceiver; slack: HttpReceiver; smtp: SmtpReceiver }): Record<string, string[]> {
  const stateOf = (text: string): string => /\[(\w+)\]/.exec(text)?.[1]?.toLowerCase() ?? '?';
  return {
    webhook: r.webhook.received
      .map((d) => d.json as { condition: string; state: string })
      .filter((m) => m.condition === 'api-key-refused')
      .map((m) => m.state),
    slack: r.slack.received
      .map((d) => (d.json as { text: string }).text)
      .filter((text) => text.includes(' api-key-refused:'))
      .map(stateOf),
    email: r.smtp.mails
      .map((m) => m.headers['subject'] ?? '')
      .filter((subject) => subject.includes(' api-key-refused:'))
      .map(stateOf),
  };
}

describe('the notification channels given as files', () => {
  it('rotated between two messages: the next one reaches the new receivers, signed with the new secret', { timeout: 120_000 }, async () => {
    const [oldSecret, newSecret, oldPassword, newPassword] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const before = await notifyReceivers(oldSecret, oldPassword, '/services/T0/B0/before');
    const after = await notifyReceivers(newSecret, newPassword, '/services/T0/B0/after');
    t = await createE2eEnv({
      sandbox: { autoCreateDeliveries: true },
      settings: { notify: { checkIntervalMs: 200, email: { rejectUnauthorized: false } }, delivery: { authProbeMs: 500 } },
    });
    const env = t;
    // The webhook URL, its secret and the SMTP URL rewritten in place; the Slack URL as a Kubernetes Secret rotates it.
    const files = { webhookUrl: join(env.dir, 'webhook-url'), webhookSecret: join(env.dir, 'webhook-secret'), smtpUrl: join(env.dir, 'smtp-url') };
    await writeFile(files.webhookUrl, `${before.webhook.url}\n`);
    await writeFile(files.webhookSecret, oldSecret);
    await writeFile(files.smtpUrl, before.smtp.url);
    const secretDir = join(env.dir, 'slack-secret');
    await mkdir(join(secretDir, '..2026_01'), { recursive: true });
    await writeFile(join(secretDir, '..2026_01', 'slack-url'), before.slack.url);
    await symlink('..2026_01', join(secretDir, '..data'));
    await symlink(join('..data', 'slack-url'), join(secretDir, 'slack-url'));

    const daemon = spawnDaemon(
      {
        ...env.env,
        CARRIER_SYNC_NOTIFY_WEBHOOK_URL_FILE: files.webhookUrl,
        CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET_FILE: files.webhookSecret,
        CARRIER_SYNC_NOTIFY_SLACK_URL_FILE: join(secretDir, 'slack-url'),
        CARRIER_SYNC_NOTIFY_SMTP_URL_FILE: files.smtpUrl,
        CARRIER_SYNC_NOTIFY_EMAIL_FROM: 'carrier-sync@wh.example',
        CARRIER_SYNC_NOTIFY_EMAIL_TO: 'ops@wh.example',
      },
      { args: env.args('start') },
    );
    await waitUntilStarted(daemon);
    env.sandbox.setFaults({ unauthorizedUntil: Date.now() + 120_000 });
    await dropFile(join(env.spool, 'labels'), `${randomUUID()}.pdf`, await makePdf('rotated channels'));
    await waitFor(() => Object.values(refusedStates(before)).every((states) => states.includes('firing')), {
      timeoutMs: 40_000,
      what: 'the firing message on every channel, at the first receivers',
    });

    // The rotation, in place (same inode) for the webhook and SMTP files, by the `..data` swap for Slack.
    const inode = (await stat(files.webhookUrl)).ino;
    await writeFile(files.webhookUrl, `${after.webhook.url}\n`);
    await writeFile(files.webhookSecret, newSecret);
    await writeFile(files.smtpUrl, after.smtp.url);
    expect((await stat(files.webhookUrl)).ino, 'rewritten in place').toBe(inode);
    await mkdir(join(secretDir, '..2026_02'));
    await writeFile(join(secretDir, '..2026_02', 'slack-url'), after.slack.url);
    await symlink('..2026_02', join(secretDir, '..data_tmp'));
    await rename(join(secretDir, '..data_tmp'), join(secretDir, '..data'));

    env.sandbox.setFaults({ unauthorizedUntil: Date.now() - 1 });
    await waitFor(() => Object.values(refusedStates(after)).every((states) => states.includes('resolved')), {
      timeoutMs: 40_000,
      what: 'the resolved message on every channel, at the new receivers',
    });
    expect(refusedStates(before)).toEqual({ webhook: ['firing'], slack: ['firing'], email: ['firing'] });
    expect(refusedStates(after)).toEqual({ webhook: ['resolved'], slack: ['resolved'], email: ['resolved'] });
    // Each receiver checks the signature with its own secret: the new one signed the message after the rotation.
    expect(before.webhook.received.every((d) => d.isSignatureValid === true)).toBe(true);
    expect(after.webhook.received.every((d) => d.isSignatureValid === true)).toBe(true);
    expect(after.smtp.mails.every((m) => m.user === 'notifier')).toBe(true);
    expect(daemon.isRunning(), 'no restart').toBe(true);
    const output = [...daemon.stderrLines, ...daemon.stdoutLines].join('\n');
    for (const secret of [oldSecret, newSecret, oldPassword, newPassword, '/services/T0/B0/']) expect(output.includes(secret)).toBe(false);
  });
});
