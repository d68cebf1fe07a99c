/**
 * Issue 45 item 8: under CARRIER_SYNC_LANG=pt-BR what a person reads from a command on the terminal
 * is Portuguese — every `--help` (commander's own headings and words too), the line for a refused
 * configuration and the line when Redis does not answer — while the default language prints the
 * English text word for word, and the codes, flags and names one types stay as they are.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createE2eEnv, type E2eEnv } from '../support/e2e-env.js';
import { englishWordsIn } from '../support/english-words.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { runCli } from '../support/process.js';

const PT = { CARRIER_SYNC_LANG: 'pt-BR' };
const COMMANDS: string[][] = [
  [],
  ['start'],
  ['status'],
  ['dlq'],
  ['dlq', 'list'],
  ['dlq', 'retry'],
  ['dlq', 'purge'],
  ['enqueue'],
  ['enqueue', 'collecting'],
  ['webhook'],
  ['webhook', 'set'],
  ['validate'],
  ['sandbox'],
  ['backfill'],
  ['resume'],
  ['notify'],
  ['notify', 'test'],
  ['history'],
  ['config'],
  ['config', 'check'],
];
/** commander's own English, which must not be left under pt-BR. */
const COMMANDER_WORDS = ['Usage:', 'Options:', 'Commands:', 'Arguments:', 'display help', 'output the version', '[options]', '[command]', '(default:'];

/** The prose of a help text: without the usage line, the left column (command, flag and argument names one types), flags and quoted defaults. */
function prose(text: string): string {
  return text
    .split('\n')
    .filter((line) => !line.startsWith('Uso:'))
    .map((line) =>
      line
        .replace(/^ {2}\S.*? {2,}/, '  ')
        .replace(/--?[a-zA-Z][\w-]*/g, ' ')
        .replace(/"[^"]*"/g, ' '),
    )
    .join('\n');
}

async function help(args: readonly string[], env: Record<string, string>): Promise<string> {
  const result = await runCli([...args, '--help'], { env });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

let env: E2eEnv | undefined;
let redis: OwnRedis | undefined;
afterAll(async () => {
  await redis?.close();
  await env?.close();
});

describe('--help under pt-BR', () => {
  it('every command prints Portuguese help: headings, descriptions, options and arguments', { timeout: 120_000 }, async () => {
    // Four at a time: twenty Node starts at once on a busy two-core machine ran past runCli's bound.
    const outputs: { args: string[]; text: string }[] = [];
    for (let i = 0; i < COMMANDS.length; i += 4) {
      outputs.push(...(await Promise.all(COMMANDS.slice(i, i + 4).map(async (args) => ({ args, text: await help(args, PT) })))));
    }
    for (const { args, text } of outputs) {
      expect(englishWordsIn(prose(text)), `carrier-sync ${args.join(' ')} --help:\n${text}`).toEqual([]);
      for (const word of COMMANDER_WORDS) expect(text, `carrier-sync ${args.join(' ')} --help`).not.toContain(word);
      expect(text).toMatch(/^Uso: carrier-sync/);
      expect(text).toContain('Opções:');
    }
    const root = outputs[0]!.text;
    expect(root).toContain('Comandos:');
    expect(root).toContain('-V, --version');
    expect(root).toContain('mostra a ajuda do comando');
    expect(outputs.find(({ args }) => args.join(' ') === 'dlq retry')!.text).toContain('Argumentos:');
    expect(outputs.find(({ args }) => args.join(' ') === 'sandbox')!.text).toContain('(padrão: "4010")');
  });

  it('the locale spellings the config reads choose Portuguese too; English stays as it was', { timeout: 30_000 }, async () => {
    const variants: Record<string, string>[] = [
      { CARRIER_SYNC_LANG: 'pt_BR' },
      { CARRIER_SYNC_LANG: 'pt-br' },
      { LANG: 'pt_BR.UTF-8' },
      { LC_ALL: 'pt_BR.UTF-8' },
    ];
    for (const variant of variants) {
      expect(await help(['dlq'], variant), JSON.stringify(variant)).toMatch(/^Uso: carrier-sync dlq \[opções\] \[comando\]/);
    }
    const english = await help(['sandbox'], {});
    expect(english).toMatch(/^Usage: carrier-sync sandbox \[options\]/);
    expect(english).toContain('Options:');
    expect(english).toContain('port to listen on (0: a free one) (default: "4010")');
    expect(english).toMatch(/-h, --help +display help for command/);
    const root = await help([], { CARRIER_SYNC_LANG: 'en', LANG: 'pt_BR.UTF-8' });
    expect(root).toMatch(/^Usage: carrier-sync \[options\] \[command\]\n\nPushes label PDFs/);
    expect(root).toContain('help [command]');
    expect(root).toContain('-V, --version');
  });
});

describe('error lines under pt-BR', () => {
  it('a refused setting is named in Portuguese; the variable and the setting keep their names', async () => {
    const bad = { CARRIER_SYNC_CONCURRENCY: 'abc' };
    const pt = await runCli(['status'], { env: { ...PT, ...bad } });
    expect(pt.code).toBe(2);
    expect(pt.stderr.trim()).toMatch(/^carrier-sync: configuração inválida: delivery\.concurrency \[CARRIER_SYNC_CONCURRENCY\]: /);
    expect(englishWordsIn(pt.stderr)).toEqual([]);
    expect(pt.stderr).not.toMatch(/invalid|expected|received/i);
    const en = await runCli(['status'], { env: bad });
    expect(en.code).toBe(2);
    expect(en.stderr.trim()).toMatch(/^carrier-sync: invalid configuration: delivery\.concurrency \[CARRIER_SYNC_CONCURRENCY\]: .*expected number/);
  });

  it('a config file that cannot be read is said in Portuguese', async () => {
    const result = await runCli(['--config', '/nonexistent/carrier-sync.yaml', 'status'], { env: PT });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(/^carrier-sync: não foi possível ler o arquivo de configuração \/nonexistent\/carrier-sync\.yaml: /);
  });

  it('status gives up on a Redis that does not answer with one Portuguese line naming the address, exit 1', { timeout: 30_000 }, async () => {
    redis = await startOwnRedis({ isStartedNow: false });
    env = await createE2eEnv();
    const result = await runCli(env.args('status'), { env: { ...env.env, ...PT, REDIS_URL: redis.url }, timeoutMs: 15_000 });
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        /^carrier-sync: o Redis não responde em redis:\/\/127\.0\.0\.1:\d+ \(de REDIS_URL \(redis\.url\)\): .*; desistimos depois de \d+ ms$/,
      ),
    ]);
    // The wait is the command's 6 s from its start, at least 2 s of it for Redis (src/cli/shared.ts).
    const waitedMs = Number(/depois de (\d+) ms$/.exec(lines[0]!)?.[1]);
    expect(waitedMs).toBeGreaterThanOrEqual(2000);
    expect(waitedMs).toBeLessThanOrEqual(6000);
    expect(englishWordsIn(lines[0]!.replace(/\(de REDIS_URL.*; desistimos/, 'desistimos'))).toEqual([]);
  });
});
