/**
 * TLS and an ACL user on all three topologies (issue 28 item 5): redis-server with `--tls-port`
 * only (no plain port), a private CA made with openssl in the test, and a user with a password
 * (the default user off). The daemon trusts the CA only through NODE_EXTRA_CA_CERTS, as a
 * deployment would; it sends, and `status` (text and --json) and the /ui overview name the topology. Neither the password nor any
 * key material appears in anything the processes print; without the CA the start fails in one
 * line that does not repeat the password either.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { startClusterSet, startSentinelSet, startSingle, type TopologyOptions } from '../support/redis-topologies.js';
import type { TestCerts } from '../support/tls-certs.js';
import { waitFor } from '../support/wait.js';

const PASSWORD = `acl-${randomUUID()}`;
const SENTINEL_PASSWORD = `sentinel-${randomUUID()}`;
const SECURE: TopologyOptions = { tls: true, acl: { user: 'carrier-sync', password: PASSWORD }, sentinelPassword: SENTINEL_PASSWORD };

let opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await killAllDaemons();
  for (const resource of opened.reverse()) await resource.close();
  opened = [];
});

interface Secured {
  env: Record<string, string>;
  certs: TestCerts;
}

const topologies: Record<'single' | 'sentinel' | 'cluster', () => Promise<Secured>> = {
  single: async () => {
    const set = await startSingle(SECURE);
    opened.push(set);
    return { env: { REDIS_URL: set.url }, certs: set.certs! };
  },
  sentinel: async () => {
    const set = await startSentinelSet(SECURE);
    opened.push(set);
    return {
      env: { REDIS_URL: set.url, CARRIER_SYNC_REDIS_SENTINELS: set.sentinels, CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD },
      certs: set.certs!,
    };
  },
  cluster: async () => {
    const set = await startClusterSet(SECURE);
    opened.push(set);
    return { env: { REDIS_URL: set.url, CARRIER_SYNC_REDIS_CLUSTER: 'true' }, certs: set.certs! };
  },
};

it.each(Object.keys(topologies) as Array<keyof typeof topologies>)(
  '%s over TLS with an ACL user: sends, shows its topology, and never prints the password or key material',
  { timeout: 90_000 },
  async (kind) => {
    const secured = await topologies[kind]();
    const env: E2eEnv = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
    opened.push(env);
    const daemonEnv = { ...env.env, ...secured.env, CARRIER_SYNC_PREFIX: `{${env.prefix}}`, NODE_EXTRA_CA_CERTS: secured.certs.caFile };
    const secrets = [
      PASSWORD,
      encodeURIComponent(PASSWORD),
      'PRIVATE KEY',
      'BEGIN CERTIFICATE',
      (await readFile(secured.certs.keyFile, 'utf8')).split('\n')[1]!,
    ];
    const clean = (text: string): void => {
      for (const secret of secrets) expect(text.includes(secret), `output holds ${secret.slice(0, 12)}…`).toBe(false);
    };

    // Without the CA: refused by TLS, in one line that names the cause and holds no secret.
    const untrusted = await runCli(env.args('status', '--json'), { env: { ...daemonEnv, NODE_EXTRA_CA_CERTS: undefined }, timeoutMs: 30_000 });
    expect(untrusted.code, untrusted.stderr).toBe(2);
    expect(untrusted.stderr.trim().split('\n'), 'one line').toHaveLength(1);
    expect(untrusted.stderr).toMatch(/^carrier-sync: Redis at \S+: its TLS certificate is not trusted \(.+\); give its CA in NODE_EXTRA_CA_CERTS/);
    clean(untrusted.stdout + untrusted.stderr);

    if (kind === 'single') {
      const wrong = await runCli(env.args('status'), {
        env: { ...daemonEnv, REDIS_URL: secured.env['REDIS_URL']!.replace(PASSWORD, 'not-the-password') },
        timeoutMs: 30_000,
      });
      expect(wrong.code, wrong.stderr).toBe(2);
      expect(wrong.stderr).toMatch(/^carrier-sync: Redis at rediss:\/\/127\.0\.0\.1:\d+: refused the user or password of REDIS_URL/);
      expect(wrong.stderr).not.toContain('not-the-password');
    }

    if (kind === 'sentinel') {
      const wrong = await runCli(env.args('status'), { env: { ...daemonEnv, CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: 'not-the-password' }, timeoutMs: 30_000 });
      expect(wrong.code, wrong.stderr).toBe(2);
      expect(wrong.stderr).toMatch(/^carrier-sync: Redis at sentinels:\/\/\S+: the sentinels refused CARRIER_SYNC_REDIS_SENTINEL_PASSWORD/);
      expect(wrong.stderr).not.toContain('not-the-password');
    }

    const daemon = spawnDaemon(daemonEnv, { args: env.args('start') });
    await waitUntilStarted(daemon, 30_000);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) await dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf(id));
    await waitFor(async () => (await listFiles(join(env.spool, 'archive'))).length === ids.length, { timeoutMs: 30_000, what: 'the labels archived' });
    for (const id of ids) expect(env.sandbox.state.deliveries.get(id)?.label, `label of ${id}`).toBeTruthy();

    const status = await runCli(env.args('status', '--json'), { env: daemonEnv, timeoutMs: 30_000 });
    expect(status.code, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as { topology: { kind: string; primary: string | null } };
    expect(report.topology.kind).toBe(kind);
    expect(report.topology.primary).toMatch(/^127\.0\.0\.1:\d+$/);
    const text = await runCli(env.args('status'), { env: daemonEnv, timeoutMs: 30_000 });
    expect(text.stdout).toMatch(new RegExp(`^redis: ${kind}, primary 127\\.0\\.0\\.1:\\d+`, 'm'));

    // The overview shows it too (JSON and the page).
    const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
    const overview = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { details: { topology: { kind: string; primary: string } } };
    expect(overview.details.topology).toMatchObject({ kind, primary: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    const page = await (await fetch(`${opsUrl}/ui/`)).text();
    expect(page).toMatch(new RegExp(`data-figure="redis-topology">${kind}, primary 127\\.0\\.0\\.1:\\d+`));
    clean(JSON.stringify(overview) + page);

    daemon.kill('SIGTERM');
    expect((await daemon.exited).code, daemon.tail()).toBe(0);
    clean([...daemon.stdoutLines, ...daemon.stderrLines, status.stdout, status.stderr, text.stdout, text.stderr].join('\n'));
  },
);
