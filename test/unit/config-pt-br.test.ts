/**
 * Issue 45 item 8: a configuration refused by one of carrier-sync's own checks (config/schema.ts) or
 * by the Redis address (config/redis-target.ts) reads in Portuguese on the terminal under pt-BR —
 * the line `start`, `status` and `config check` print (cli/error-text.ts) — while the English line,
 * the error's `message` (logs, `config check --json`), stays word for word what it was.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { redisTargetOf } from '../../src/config/redis-target.js';
import { configErrorText } from '../../src/cli/error-text.js';
import { EN, type MessageKey } from '../../src/i18n/catalog-en.js';
import { say } from '../../src/i18n/translate.js';
import { englishWordsIn } from '../support/english-words.js';

const CONFIG_FILE = '/etc/carrier-sync/site.yaml';

interface Case {
  key: MessageKey;
  /** The English line as it read before the catalog held it (main's schema.ts): it must not change. */
  english: string;
  env?: Record<string, string>;
  /** A --config file's YAML. */
  file?: string;
  values?: Record<string, string>;
}

const CASES: readonly Case[] = [
  {
    key: 'config.check.timeZone',
    env: { CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao Paulo' },
    english: 'must be an IANA time zone, e.g. America/Sao_Paulo (see the tz database list)',
  },
  { key: 'config.check.smtpUrl', env: { CARRIER_SYNC_NOTIFY_SMTP_URL: 'mail.example:25' }, english: 'must be smtp://user:pass@host:port or smtps://…' },
  { key: 'config.check.redisUrl', file: 'redis:\n  url: http://cache:6379\n', english: 'must start with redis://, rediss:// or unix://' },
  { key: 'config.check.sentinel', env: { CARRIER_SYNC_REDIS_SENTINELS: 's1' }, english: 'each sentinel is host:port' },
  { key: 'config.check.prefix', file: 'prefix: "carrier sync"\n', english: 'letters, digits, _ . - { } only, 1-64 chars' },
  { key: 'config.check.spoolId', env: { CARRIER_SYNC_SPOOL_ID: 'dock 1' }, english: 'letters, digits, _ and - only, 1-64 chars' },
  {
    key: 'config.check.traceUrl',
    env: { CARRIER_SYNC_TRACE_URL: 'https://tempo.example/trace/' },
    values: { placeholder: '{traceId}' },
    english: 'must be an http(s) URL holding {traceId}, e.g. https://tempo.example/trace/{traceId}',
  },
  {
    key: 'config.check.clusterNeedsUrl',
    env: { CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_PREFIX: '{cs}' },
    english: 'REDIS_URL (the cluster seed nodes) is required when redis.cluster is on',
  },
  {
    key: 'config.check.clusterWithSentinels',
    env: { CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_REDIS_SENTINELS: 's1:26379', REDIS_URL: 'redis://a:1', CARRIER_SYNC_PREFIX: '{cs}' },
    english: 'CARRIER_SYNC_REDIS_SENTINELS and CARRIER_SYNC_REDIS_CLUSTER exclude each other: a Cluster fails over by itself, without sentinels',
  },
  {
    key: 'config.check.sentinelUrlOneNode',
    env: { CARRIER_SYNC_REDIS_SENTINELS: 's1:26379', REDIS_URL: 'redis://a:1,redis://b:2' },
    english: 'with CARRIER_SYNC_REDIS_SENTINELS, REDIS_URL names one node (its user, password, db and TLS); the sentinels find the primary',
  },
  {
    key: 'config.check.urlSeveralNodes',
    env: { REDIS_URL: 'redis://a:1,redis://b:2' },
    english: 'REDIS_URL lists several nodes: set CARRIER_SYNC_REDIS_CLUSTER=true for a Cluster, or CARRIER_SYNC_REDIS_SENTINELS for Sentinel',
  },
  {
    key: 'config.check.sentinelPasswordAlone',
    env: { CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: 'pw-1' },
    english: 'CARRIER_SYNC_REDIS_SENTINEL_PASSWORD is set but CARRIER_SYNC_REDIS_SENTINELS is not',
  },
  {
    key: 'config.check.clusterPrefix',
    env: { CARRIER_SYNC_REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1' },
    english: 'on Redis Cluster the prefix must be one hash tag, e.g. {carrier-sync}, so every key of a deployment shares a slot',
  },
  {
    key: 'config.check.holderFile',
    file: 'spool:\n  leaseMs: 10000\n  holderFileMs: 15000\n',
    values: { min: '20000' },
    english: 'must be at least 2 spool.leaseMs (20000): the holder file is renewed with the lease',
  },
  {
    key: 'config.check.emailNeeds',
    env: { CARRIER_SYNC_NOTIFY_SMTP_URL: 'smtp://mail.example:25' },
    english: 'CARRIER_SYNC_NOTIFY_EMAIL_FROM and CARRIER_SYNC_NOTIFY_EMAIL_TO are required when CARRIER_SYNC_NOTIFY_SMTP_URL is set',
  },
  {
    key: 'config.check.carrierKeyNeeded',
    env: { CARRIER_SYNC_API_URL: 'http://api.example' },
    english: 'CARRIER_SYNC_CARRIER_KEY is required when CARRIER_SYNC_API_URL is set',
  },
];

/** The words of the English checks that a Portuguese line must not hold (beyond englishWordsIn's list). */
const CHECK_WORDS = /\b(must|required|letters|digits|chars|exclude|lists|names|holding|renewed|mixes|expected|set|see|e\.g\.)\b/;

function refusalOf(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('not refused');
}

function loadWith(testCase: Pick<Case, 'env' | 'file'>): Error {
  return refusalOf(() =>
    loadConfig({
      env: testCase.env ?? {},
      configPath: testCase.file === undefined ? undefined : CONFIG_FILE,
      readFile: (path) => (path === CONFIG_FILE ? testCase.file! : readFileSync(path, 'utf8')),
    }),
  );
}

describe("the configuration's own checks under pt-BR", () => {
  it('every check of config/schema.ts has a case here', () => {
    const checks = Object.keys(EN).filter((key) => key.startsWith('config.check.'));
    expect(CASES.map((c) => c.key).sort()).toEqual(checks.sort());
  });

  it.each(CASES)('$key reads in Portuguese; the English line is as it was', (testCase) => {
    const error = loadWith(testCase);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    const english = configErrorText('en', error);
    expect(english).toContain(testCase.english);
    expect(error.message).toBe(english);

    const portuguese = configErrorText('pt-BR', error);
    expect(portuguese).toMatch(/^configuração inválida: /);
    expect(portuguese).toContain(say('pt-BR', testCase.key, testCase.values));
    expect(portuguese).not.toContain(testCase.english);
    expect(englishWordsIn(portuguese), portuguese).toEqual([]);
    expect(portuguese, portuguese).not.toMatch(CHECK_WORDS);
    if (testCase.file !== undefined && testCase.env === undefined) expect(portuguese).toContain(`[arquivo ${CONFIG_FILE}]`);
    expect(portuguese).not.toMatch(/pw-\d/);
  });
});

describe('a bad Redis address under pt-BR', () => {
  const targetOf = (env: Record<string, string>) => () => {
    const config = loadConfig({ env });
    return redisTargetOf(config.redis, config.redis.url);
  };
  it.each([
    [
      'config.error.redisNotUrl',
      { REDIS_URL: 'redis://app:pw-2@cache:99999' },
      'REDIS_URL (or a sentinel) is not a URL: expected redis[s]://[user:password@]host:port[/db]',
    ],
    [
      'config.error.sentinelSchemes',
      { CARRIER_SYNC_REDIS_SENTINELS: 'redis://a:1,rediss://b:2' },
      'CARRIER_SYNC_REDIS_SENTINELS mixes redis:// and rediss:// entries: all sentinels are reached the same way',
    ],
  ] as const)('%s reads in Portuguese; the English line is as it was', (key, env, english) => {
    const error = refusalOf(targetOf(env));
    expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: english });
    expect(configErrorText('en', error)).toBe(english);
    const portuguese = configErrorText('pt-BR', error);
    expect(portuguese).toBe(say('pt-BR', key));
    expect(englishWordsIn(portuguese), portuguese).toEqual([]);
    expect(portuguese).not.toMatch(/pw-\d/);
  });

  it('REDIS_URL required without sentinels: the same', () => {
    const error = refusalOf(() => redisTargetOf({ cluster: false, sentinels: [], sentinelName: 'mymaster', sentinelPassword: null }, null));
    expect(error.message).toBe('REDIS_URL is required here (no sentinels set)');
    expect(configErrorText('pt-BR', error)).toBe('REDIS_URL é obrigatória aqui (nenhum sentinel definido)');
  });
});
