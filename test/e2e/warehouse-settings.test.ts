/**
 * Issue 45 on the built binary, as a warehouse's person meets it: Excel's events CSV through
 * `validate` and through the daemon to the API, `config check`, a mistyped variable, the language
 * written as a locale, and a spool on a share that is not mounted.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type CliResult, type ProcessEnv } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const EVENTS = new URL('../fixtures/events/', import.meta.url).pathname;
const CP1252 = join(EVENTS, 'excel-semicolon-cp1252.csv');
const BOM = join(EVENTS, 'excel-utf8-bom.csv');

let t: E2eEnv;
beforeAll(async () => {
  t = await createE2eEnv();
});
afterAll(async () => {
  await killAllDaemons();
  await t.close();
});

async function run(args: string[], env: ProcessEnv = {}): Promise<CliResult> {
  const result = await runCli(args, { env: { ...t.env, ...env }, timeoutMs: 20_000 });
  expect(result.stdout + result.stderr, `output of ${args.join(' ')}`).not.toContain(t.carrierKey);
  return result;
}

describe('Excel events files', () => {
  it('validate: without a zone each local time is refused naming CARRIER_SYNC_EVENTS_TIME_ZONE; with it both files are valid', async () => {
    const refused = await run(t.args('validate', CP1252));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('no valid record');
    expect(refused.stdout).toMatch(/line 2: EVENT_BAD_TIME: event_at "01\/03\/2026 09:30" has no UTC offset; .*CARRIER_SYNC_EVENTS_TIME_ZONE/);
    const accepted = await run(t.args('validate', CP1252, BOM), { CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao_Paulo' });
    expect(accepted.code, accepted.stdout + accepted.stderr).toBe(0);
    expect(accepted.stdout.match(/2 valid records/g)).toHaveLength(2);
  });

  it('validate in pt-BR from LANG=pt_BR.UTF-8: the hint in Portuguese', async () => {
    const refused = await run(t.args('validate', CP1252), { LANG: 'pt_BR.UTF-8' });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/não tem fuso horário \(UTC\); .*defina CARRIER_SYNC_EVENTS_TIME_ZONE/);
  });

  it('the daemon sends Windows-1252 `;` rows written dd/mm/aaaa in America/Sao_Paulo to the API as UTC instants and archives the file; a mistyped variable is one warn line', async () => {
    // The fixture's delivery ids are not UUID-shaped as the sandbox's are: the same bytes, other ids.
    const [first, second] = [randomUUID(), randomUUID()];
    for (const id of [first, second]) t.sandbox.state.addDelivery({ id });
    const bytes = Buffer.from(readFileSync(CP1252).toString('latin1').replace('dlv-excel-1', first).replace('dlv-excel-2', second), 'latin1');
    expect(bytes.includes(Buffer.from([0xe7, 0xe3]))).toBe(true);
    const daemon = spawnDaemon(
      { ...t.env, CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao_Paulo', CARRIER_SYNC_SPOOL: '/mnt/share/spool', LOG_LEVEL: 'info' },
      { args: t.args('start') },
    );
    await waitUntilStarted(daemon);
    const warned = daemon.logs().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('unknown variable'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, variable: 'CARRIER_SYNC_SPOOL', closest: 'CARRIER_SYNC_SPOOL_DIR' });
    expect(warned[0]?.msg).toContain('did you mean CARRIER_SYNC_SPOOL_DIR?');

    await dropFile(join(t.spool, 'events'), 'excel-semicolon-cp1252.csv', bytes);
    const archived = await waitFor(
      async () => (await listFiles(join(t.spool, 'archive', 'events'))).find((file) => file.endsWith('/excel-semicolon-cp1252.csv')),
      {
        what: 'the Excel file archived',
        timeoutMs: 30_000,
      },
    );
    expect(archived).toMatch(/^\d{4}-\d{2}-\d{2}\//);
    expect(await listFiles(join(t.spool, 'failed'))).toEqual([]);
    const sent = (id: string): string[] => (t.sandbox.state.deliveries.get(id)?.events ?? []).map((event) => event.event_at);
    expect(sent(first)).toEqual(['2026-03-01T12:30:00.000Z']);
    expect(sent(second)).toEqual(['2026-03-01T17:05:30.000Z']);
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  });
});

describe('config check', () => {
  it('prints every setting with its source, secrets and URL passwords masked, names a mistyped variable, exit 0', async () => {
    const env = { REDIS_URL: 'redis://app:s3cret-pass@127.0.0.1:6399/0', CARRIER_SYNC_RATE_LIMIT: '100', CARRIER_SYNC_LANG: 'en' };
    const result = await run(t.args('config', 'check'), env);
    expect(result.code, result.stderr).toBe(0);
    const out = result.stdout;
    expect(out).not.toContain('s3cret-pass');
    expect(out).toContain('redis.url = "redis://app:********@127.0.0.1:6399/0"  (from the variable REDIS_URL)');
    expect(out).toContain('api.carrierKey = ********  (from the variable CARRIER_SYNC_CARRIER_KEY)');
    expect(out).toContain(`delivery.lockMs = 3000  (from the file ${t.configPath})`);
    expect(out).toContain('delivery.ratePerMinute = 300  (from the default)');
    expect(out).toContain('unknown variable CARRIER_SYNC_RATE_LIMIT, ignored: no setting has this name; did you mean CARRIER_SYNC_RATE_LIMIT_PER_MINUTE?');
    expect(out.trimEnd().split('\n').at(-1)).toMatch(/^configuration valid: \d+ settings, \d+ of them from variables$/);
  });

  it('--json: settings with source and from, unknown variables, valid true', async () => {
    const result = await run(t.args('config', 'check', '--json'), { CARRIER_SYNC_SPOOL: '/x' });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      valid: boolean;
      settings: Array<{ setting: string; value: unknown; source: string; from: string }>;
      unknownVariables: Array<{ variable: string; closest: string }>;
    };
    expect(report.valid).toBe(true);
    expect(report.settings.find((row) => row.setting === 'spool.dir')).toEqual({
      setting: 'spool.dir',
      value: t.spool,
      source: 'variable',
      from: 'CARRIER_SYNC_SPOOL_DIR',
    });
    expect(report.settings.find((row) => row.setting === 'api.carrierKey')?.value).toBe('********');
    expect(report.unknownVariables).toEqual([{ variable: 'CARRIER_SYNC_SPOOL', closest: 'CARRIER_SYNC_SPOOL_DIR' }]);
  });

  it('an error: exit 2 with one line naming where the value came from (text), valid false (JSON)', async () => {
    const badFile = join(t.dir, 'bad-lang.yaml');
    await writeFile(badFile, 'lang: pt_XX\n');
    const text = await run(['--config', badFile, 'config', 'check']);
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(text.stderr).toContain(`lang [file ${badFile}]`);
    expect(text.stderr).not.toContain('CARRIER_SYNC_LANG');
    const json = await run(t.args('config', 'check', '--json'), { CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao Paulo' });
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as { valid: boolean; errors: string[] };
    expect(report.valid).toBe(false);
    expect(report.errors[0]).toMatch(/spool\.eventsTimeZone \[CARRIER_SYNC_EVENTS_TIME_ZONE\]: must be an IANA time zone/);
  });

  it('in pt-BR from pt_BR, and --help', async () => {
    const result = await run(t.args('config', 'check'), { CARRIER_SYNC_LANG: 'pt_BR' });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('lang = "pt-BR"  (vindo da variável CARRIER_SYNC_LANG)');
    expect(result.stdout.trimEnd().split('\n').at(-1)).toMatch(/^configuração válida: \d+ ajustes, \d+ deles vindos de variáveis$/);
    const help = await run(['config', 'check', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: carrier-sync config check/);
  });
});

describe('a spool on a share that is not mounted', () => {
  it('start refuses it with one line and exit 2, and makes no folder', async () => {
    const share = join(t.dir, 'share-not-mounted');
    const daemon = spawnDaemon({ ...t.env, CARRIER_SYNC_SPOOL_DIR: join(share, 'spool') }, { args: t.args('start') });
    const { code } = await daemon.exited;
    expect(code, daemon.tail()).toBe(2);
    const plain = daemon.stderrLines.filter((line) => !line.startsWith('{'));
    expect(plain).toEqual([
      expect.stringMatching(/^carrier-sync: spool\.dir: the folder .*share-not-mounted does not exist, so the spool .* is not made in it/),
    ]);
    expect((await readdir(t.dir)).includes('share-not-mounted')).toBe(false);
  });

  it('a spool root whose parent exists is made, with its inboxes', async () => {
    const parent = join(t.dir, 'mounted');
    await mkdir(parent);
    const daemon = spawnDaemon(
      { ...t.env, CARRIER_SYNC_SPOOL_DIR: join(parent, 'spool'), CARRIER_SYNC_PREFIX: `${t.prefix}-mounted` },
      { args: t.args('start') },
    );
    await waitUntilStarted(daemon);
    await waitFor(async () => (await readdir(join(parent, 'spool')).catch((): string[] => [])).includes('events'), { what: 'the inboxes made' });
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  });
});
