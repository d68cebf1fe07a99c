/**
 * Issue 45 item 8, the rest of the terminal's error lines: under CARRIER_SYNC_LANG=pt-BR the built
 * CLI words in Portuguese a setting refused by carrier-sync's own checks (from a --config file or
 * a variable), a bad Redis address, and commander's own lines (an unknown option or command, a
 * missing argument or option value, too many arguments), with commander's exit code (2) and its
 * "did you mean" suggestion, and a command's own checks of its flags' values (`--older-than 2x`);
 * flags, names and variables stay as typed, and English reads as it did.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { englishWordsIn } from '../support/english-words.js';
import { runCli, type CliResult } from '../support/process.js';
import { startOwnRedis } from '../support/own-redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const PT = { CARRIER_SYNC_LANG: 'pt-BR' };
/** Words of commander's and the checks' English that englishWordsIn's list does not hold. */
const ENGLISH_LEFT = /\b(unknown|missing|required|argument|arguments|option|command|must|letters|digits|chars|expected|Did you mean|see)\b/i;

const dir = mkdtempSync(join(tmpdir(), 'pt-br-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The one stderr line (two with a suggestion) a refused command prints, checked for English left. */
function portugueseLine(result: CliResult): string {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe('');
  const text = result.stderr.trim();
  expect(text).toMatch(/^carrier-sync: /);
  expect(englishWordsIn(text), text).toEqual([]);
  expect(text, text).not.toMatch(ENGLISH_LEFT);
  return text;
}

describe("the configuration's own checks under pt-BR", () => {
  it('a --config file with a prefix and a holder-file time out of bounds: Portuguese from `config check` and `status`, naming the file', async () => {
    const file = join(dir, 'site.yaml');
    writeFileSync(file, 'prefix: "carrier sync"\nspool:\n  leaseMs: 10000\n  holderFileMs: 15000\n');
    for (const command of [['config', 'check'], ['status']]) {
      const text = portugueseLine(await runCli(['--config', file, ...command], { env: PT }));
      expect(text).toContain(`configuração inválida: prefix [arquivo ${file}]: só letras, dígitos e _ . - { }, de 1 a 64 caracteres`);
      expect(text).toContain(`spool.holderFileMs [arquivo ${file}]: precisa ser pelo menos 2 vezes spool.leaseMs (20000)`);
    }
    const english = await runCli(['--config', file, 'config', 'check'], { env: {} });
    expect(english.code).toBe(2);
    expect(english.stderr).toContain(`prefix [file ${file}]: letters, digits, _ . - { } only, 1-64 chars`);
    expect(english.stderr).toContain('must be at least 2 spool.leaseMs (20000): the holder file is renewed with the lease');
  });

  it('variables that do not go together (Cluster with sentinels, a sentinel password alone): Portuguese from `start`', async () => {
    const env = { CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_REDIS_SENTINELS: 's1:26379', REDIS_URL: 'redis://a:1', CARRIER_SYNC_PREFIX: '{cs}' };
    const text = portugueseLine(await runCli(['start'], { env: { ...PT, ...env } }));
    expect(text).toMatch(
      /^carrier-sync: configuração inválida: redis\.sentinels \[CARRIER_SYNC_REDIS_SENTINELS\]: CARRIER_SYNC_REDIS_SENTINELS e CARRIER_SYNC_REDIS_CLUSTER se excluem/,
    );
    const alone = portugueseLine(await runCli(['config', 'check'], { env: { ...PT, CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: 'pw-secret-1' } }));
    expect(alone).toContain('CARRIER_SYNC_REDIS_SENTINEL_PASSWORD está definida, mas CARRIER_SYNC_REDIS_SENTINELS não');
    expect(alone).not.toContain('pw-secret-1');
    const english = await runCli(['start'], { env });
    expect(english.stderr).toContain('exclude each other: a Cluster fails over by itself, without sentinels');
  });
});

describe('a bad Redis address under pt-BR', () => {
  it('a REDIS_URL that is no URL: one Portuguese line, exit 2, the password not repeated', async () => {
    const env = { REDIS_URL: 'redis://app:pw-secret-2@cache:99999' };
    const text = portugueseLine(await runCli(['status'], { env: { ...PT, ...env } }));
    expect(text).toBe('carrier-sync: REDIS_URL (ou um sentinel) não é uma URL: o esperado é redis[s]://[usuário:senha@]servidor:porta[/db]');
    const english = await runCli(['status'], { env });
    expect(english.code).toBe(2);
    expect(english.stderr.trim()).toBe('carrier-sync: REDIS_URL (or a sentinel) is not a URL: expected redis[s]://[user:password@]host:port[/db]');
  });
});

describe('refusals found once a command runs, under pt-BR', () => {
  it('no REDIS_URL and no redis-server on the PATH: one Portuguese line, exit 2', async () => {
    const env = { PATH: '/nonexistent' };
    const text = portugueseLine(await runCli(['status'], { env: { ...PT, ...env } }));
    expect(text).toBe(
      'carrier-sync: REDIS_URL não está definida e não há redis-server nesta máquina para rodar um: dê ao carrier-sync o Redis dele com REDIS_URL (ou CARRIER_SYNC_REDIS_SENTINELS)',
    );
    const english = await runCli(['status'], { env });
    expect(english.stderr.trim()).toBe(
      'carrier-sync: REDIS_URL is not set and there is no redis-server on this machine to run one: give carrier-sync its Redis with REDIS_URL (or CARRIER_SYNC_REDIS_SENTINELS)',
    );
  });

  it('a spool whose parent folder does not exist (a share not mounted): `start` says so in Portuguese, exit 2', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix('ptbr-spool');
    const spool = join(dir, 'not-mounted', 'spool');
    const env = { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: prefix, CARRIER_SYNC_SPOOL_DIR: spool, CARRIER_SYNC_HTTP_PORT: '0' };
    try {
      const pt = await runCli(['start', '--roles', 'watcher'], { env: { ...PT, ...env }, timeoutMs: 45_000 });
      expect(pt.code, pt.stderr).toBe(2);
      const line = pt.stderr.trim().split('\n').at(-1)!;
      expect(line).toBe(
        `carrier-sync: spool.dir: a pasta ${join(dir, 'not-mounted')} não existe, então o spool ${spool} não é criado nela (um compartilhamento não montado?): monte-a ou crie-a, ou aponte CARRIER_SYNC_SPOOL_DIR (spool.dir) para o lugar real do spool`,
      );
      expect(englishWordsIn(line)).toEqual([]);
    } finally {
      await cleanupPrefix(prefix);
    }
  });
});

describe('a Redis that refuses, under pt-BR', () => {
  it("a wrong password, and an evicting Redis at start: Portuguese lines around Redis' own words, exit 2, no password", { timeout: 90_000 }, async () => {
    const secured = await startOwnRedis({ extraArgs: ['--requirepass', 'pw-secret-3'] });
    const evicting = await startOwnRedis({ maxmemoryPolicy: 'allkeys-lru' });
    try {
      const wrongUrl = secured.url.replace('redis://', 'redis://:not-the-password-4@');
      const wrong = await runCli(['status'], { env: { ...PT, REDIS_URL: wrongUrl }, timeoutMs: 30_000 });
      expect(wrong.code, wrong.stderr).toBe(2);
      const line = wrong.stderr.trim();
      expect(line).toMatch(/^carrier-sync: Redis em redis:\/\/127\.0\.0\.1:\d+: recusou o usuário ou a senha de REDIS_URL \(WRONGPASS .*\)$/);
      expect(line).not.toMatch(/pw-secret-3|not-the-password-4/);
      expect(englishWordsIn(line.replace(/\(WRONGPASS.*\)$/, ''))).toEqual([]);

      const prefix = uniquePrefix('ptbr-evict');
      const spool = join(dir, 'evict-spool');
      const env = { REDIS_URL: evicting.url, CARRIER_SYNC_PREFIX: prefix, CARRIER_SYNC_SPOOL_DIR: spool, CARRIER_SYNC_HTTP_PORT: '0' };
      const pt = await runCli(['start', '--roles', 'worker'], { env: { ...PT, ...env }, timeoutMs: 45_000 });
      expect(pt.code, pt.stderr).toBe(2);
      const refusal = pt.stderr.trim().split('\n').at(-1)!;
      expect(refusal).toMatch(
        /^carrier-sync: a maxmemory-policy do Redis é allkeys-lru: sob pressão de memória ele descarta itens da fila, sem avisar\. Mude-a para noeviction/,
      );
      expect(englishWordsIn(refusal)).toEqual([]);
      const en = await runCli(['start', '--roles', 'worker'], { env, timeoutMs: 45_000 });
      expect(en.stderr.trim().split('\n').at(-1)).toMatch(
        /^carrier-sync: Redis maxmemory-policy is allkeys-lru: under memory pressure it evicts queued items, silently\./,
      );
    } finally {
      await secured.close();
      await evicting.close();
    }
  });
});

describe("carrier-sync's checks of a command's flags under pt-BR", () => {
  it.each([
    [
      ['dlq', 'purge', '--older-than', '2x'],
      'carrier-sync: `--older-than`: “2x” não é uma duração como 30d, 12h, 15m, 45s',
      'carrier-sync: --older-than: "2x" is not a duration like 30d, 12h, 15m, 45s',
    ],
    [
      ['history', '--sha256', 'zz'],
      'carrier-sync: `--sha256`: “zz” precisa ter de 4 a 64 dígitos hexadecimais',
      'carrier-sync: --sha256: "zz" must be 4 to 64 hex digits',
    ],
    [
      ['start', '--roles', 'watcher,pusher,reader'],
      'carrier-sync: `--roles`: papéis desconhecidos `pusher`, `reader`; escolha entre `watcher`, `worker`, `scheduler`, `http`',
      'carrier-sync: --roles: unknown role pusher, reader; choose from watcher, worker, scheduler, http',
    ],
    [
      ['notify', 'test', '--channel', 'pager'],
      'carrier-sync: `--channel` precisa ser um destes: webhook, slack, email; não “pager”',
      "carrier-sync: --channel must be one of webhook, slack, email, not 'pager'",
    ],
    [
      ['enqueue', 'collecting', '--delivery-id', 'd-1', '--event-at', 'yesterday'],
      'carrier-sync: event_at "yesterday" não é uma data e hora ISO 8601; escreva AAAA-MM-DDTHH:MM:SS(.fração)(Z|±hh:mm), por exemplo 2026-03-01T09:30:00-03:00',
      'carrier-sync: event_at "yesterday" is not an ISO 8601 date-time; write it as YYYY-MM-DDTHH:MM:SS(.fraction)(Z|±hh:mm), e.g. 2026-03-01T09:30:00-03:00',
    ],
  ])('carrier-sync %j', { timeout: 30_000 }, async (args, portuguese, english) => {
    const [pt, en] = await Promise.all([runCli(args, { env: PT }), runCli(args, { env: {} })]);
    expect(portugueseLine(pt)).toBe(portuguese);
    expect(en.code).toBe(2);
    expect(en.stderr.trim()).toBe(english);
  });
});

describe("commander's own lines under pt-BR", () => {
  it.each([
    [
      ['status', '--jsn'],
      'carrier-sync: opção desconhecida `--jsn`\n(Você quis dizer `--json`?) (veja --help)',
      "carrier-sync: unknown option '--jsn'\n(Did you mean --json?) (see --help)",
    ],
    [['--verbose'], 'carrier-sync: opção desconhecida `--verbose` (veja --help)', "carrier-sync: unknown option '--verbose' (see --help)"],
    [
      ['stauts'],
      'carrier-sync: comando desconhecido `stauts`\n(Você quis dizer `status`?) (veja --help)',
      "carrier-sync: unknown command 'stauts'\n(Did you mean status?) (see --help)",
    ],
    [['validate'], 'carrier-sync: falta o argumento obrigatório `file` (veja --help)', "carrier-sync: missing required argument 'file' (see --help)"],
    [
      ['backfill', '--kind', 'labels'],
      'carrier-sync: falta o argumento obrigatório `dir` (veja --help)',
      "carrier-sync: missing required argument 'dir' (see --help)",
    ],
    [
      ['dlq', 'purge', 'a', 'b'],
      'carrier-sync: argumentos demais para `purge`: o comando não aceita argumentos, mas vieram 2 (veja --help)',
      "carrier-sync: too many arguments for 'purge'. Expected 0 arguments but got 2. (see --help)",
    ],
    [
      ['dlq', 'purge', '--older-than'],
      'carrier-sync: a opção `--older-than <duration>` precisa de um valor (veja --help)',
      "carrier-sync: option '--older-than <duration>' argument missing (see --help)",
    ],
    [
      ['webhook', 'set', 'wh-1'],
      'carrier-sync: falta a opção obrigatória `--url <url>` (veja --help)',
      "carrier-sync: required option '--url <url>' not specified (see --help)",
    ],
  ])('carrier-sync %j', { timeout: 30_000 }, async (args, portuguese, english) => {
    const [pt, en] = await Promise.all([runCli(args, { env: PT }), runCli(args, { env: {} })]);
    expect(portugueseLine(pt)).toBe(portuguese);
    expect(en.code).toBe(2);
    expect(en.stderr.trim()).toBe(english);
  });

  it('a pt_BR locale chooses Portuguese too', async () => {
    const result = await runCli(['stauts'], { env: { LANG: 'pt_BR.UTF-8' } });
    expect(portugueseLine(result)).toMatch(/^carrier-sync: comando desconhecido `stauts`/);
  });
});
