/**
 * Settings a person mistypes (issue 45): an unknown CARRIER_SYNC_* variable is named with the
 * closest real one; `pt_BR`, `pt-br` and a pt_BR locale mean pt-BR; an error names the file or the
 * variable the wrong value came from; every setting knows its source (for `config check`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH, loadConfig, loadConfigWithSources } from '../../src/config/load.js';
import { knownVariables, unknownVariables } from '../../src/config/unknown-variables.js';
import { langOf } from '../../src/i18n/langs.js';

const withFile =
  (text: string) =>
  (path: string): string =>
    path === '/etc/cs.yaml' ? text : readFileSync(path, 'utf8');

describe('unknown CARRIER_SYNC_* variables', () => {
  it('names the closest real variable for the typos of the issue', () => {
    expect(unknownVariables({ CARRIER_SYNC_SPOOL: '/srv/spool', CARRIER_SYNC_RATE_LIMIT: '100' })).toEqual([
      { variable: 'CARRIER_SYNC_RATE_LIMIT', closest: 'CARRIER_SYNC_RATE_LIMIT_PER_MINUTE' },
      { variable: 'CARRIER_SYNC_SPOOL', closest: 'CARRIER_SYNC_SPOOL_DIR' },
    ]);
  });

  it('finds a misspelling by edit distance, a lower-case name by its upper-case twin, a _FILE form of a secret', () => {
    expect(unknownVariables({ CARRIER_SYNC_MAX_ATEMPTS: '3' })).toEqual([{ variable: 'CARRIER_SYNC_MAX_ATEMPTS', closest: 'CARRIER_SYNC_MAX_ATTEMPTS' }]);
    expect(unknownVariables({ carrier_sync_http_port: '9' })).toEqual([{ variable: 'carrier_sync_http_port', closest: 'CARRIER_SYNC_HTTP_PORT' }]);
    expect(unknownVariables({ CARRIER_SYNC_CARIER_KEY_FILE: '/run/key' })).toEqual([
      { variable: 'CARRIER_SYNC_CARIER_KEY_FILE', closest: 'CARRIER_SYNC_CARRIER_KEY_FILE' },
    ]);
    expect(unknownVariables({ CARRIER_SYNC_TIMEZONE: 'America/Sao_Paulo' })[0]?.closest).toBe('CARRIER_SYNC_EVENTS_TIME_ZONE');
  });

  it('leaves alone every real setting, the _FILE forms, failpoints, the watchdog, Kubernetes service links and other variables', () => {
    const env: Record<string, string> = Object.fromEntries(knownVariables().map((name) => [name, 'x']));
    Object.assign(env, {
      CARRIER_SYNC_CARRIER_KEY_FILE: '/run/key',
      CARRIER_SYNC_FAILPOINTS: 'batch-never-seals',
      CARRIER_SYNC_STALL_MS: '60000',
      CARRIER_SYNC_PORT: 'tcp://10.0.0.1:8080',
      CARRIER_SYNC_SERVICE_HOST: '10.0.0.1',
      CARRIER_SYNC_PORT_8080_TCP_ADDR: '10.0.0.1',
      REDIS_URL: 'redis://x',
      LOG_LEVEL: 'info',
      PATH: '/bin',
    });
    expect(unknownVariables(env)).toEqual([]);
  });
});

describe('the language setting', () => {
  it('reads pt_BR, pt-br, pt_BR.UTF-8 and pt as pt-BR, en_US as en, and nothing else', () => {
    expect(['pt-BR', 'pt_BR', 'pt-br', 'PT_br', 'pt_BR.UTF-8', 'pt_BR@euro', 'pt'].map(langOf)).toEqual(Array(7).fill('pt-BR'));
    expect(['en', 'en_US.UTF-8', 'en-GB'].map(langOf)).toEqual(['en', 'en', 'en']);
    expect(['pt_XX', 'pt_PT', 'fr', 'C.UTF-8', ''].map(langOf)).toEqual([null, null, null, null, null]);
  });

  it('takes pt_BR from CARRIER_SYNC_LANG and from a config file', () => {
    expect(loadConfig({ env: { CARRIER_SYNC_LANG: 'pt_BR' } }).lang).toBe('pt-BR');
    expect(loadConfig({ env: { CARRIER_SYNC_LANG: 'pt-br' } }).lang).toBe('pt-BR');
    expect(loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile: withFile('lang: pt_BR\n') }).lang).toBe('pt-BR');
  });

  it('follows a pt_BR locale (LC_ALL, then LC_MESSAGES, then LANG) only when nothing else chose', () => {
    expect(loadConfig({ env: { LANG: 'pt_BR.UTF-8' } }).lang).toBe('pt-BR');
    expect(loadConfig({ env: { LC_ALL: 'pt_BR.UTF-8', LANG: 'C.UTF-8' } }).lang).toBe('pt-BR');
    expect(loadConfig({ env: { LC_ALL: 'C.UTF-8', LANG: 'pt_BR.UTF-8' } }).lang).toBe('en');
    expect(loadConfig({ env: { LANG: 'pt_BR.UTF-8', CARRIER_SYNC_LANG: 'en' } }).lang).toBe('en');
    expect(loadConfig({ env: { LANG: 'pt_BR.UTF-8' }, configPath: '/etc/cs.yaml', readFile: withFile('lang: en\n') }).lang).toBe('en');
    expect(loadConfig({ env: { LANG: 'en_US.UTF-8' } }).lang).toBe('en');
  });
});

describe('config errors name where the value came from', () => {
  it('a wrong lang in a config file blames the file, not CARRIER_SYNC_LANG', () => {
    const load = (): unknown => loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile: withFile('lang: pt_XX\n') });
    expect(load).toThrowError(/lang \[file \/etc\/cs\.yaml\]/);
    expect(load).not.toThrowError(/CARRIER_SYNC_LANG/);
  });

  it('a wrong lang from the variable blames the variable', () => {
    expect(() => loadConfig({ env: { CARRIER_SYNC_LANG: 'pt_XX' } })).toThrowError(/lang \[CARRIER_SYNC_LANG\]/);
  });

  it('an unknown key in a file is blamed on the file; a value set in the file and then by a variable blames the variable', () => {
    expect(() => loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile: withFile('spool:\n  writeStabelMs: 10\n') })).toThrowError(
      /spool\.writeStabelMs \[file \/etc\/cs\.yaml\]/,
    );
    const load = (): unknown =>
      loadConfig({ env: { CARRIER_SYNC_HTTP_PORT: 'eighty' }, configPath: '/etc/cs.yaml', readFile: withFile('http:\n  port: 9000\n') });
    expect(load).toThrowError(/http\.port \[CARRIER_SYNC_HTTP_PORT\]/);
  });

  it('refuses a time zone Intl does not know, naming the variable', () => {
    expect(() => loadConfig({ env: { CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao Paulo' } })).toThrowError(
      /spool\.eventsTimeZone \[CARRIER_SYNC_EVENTS_TIME_ZONE\]: must be an IANA time zone/,
    );
    expect(loadConfig({ env: { CARRIER_SYNC_EVENTS_TIME_ZONE: 'America/Sao_Paulo' } }).spool.eventsTimeZone).toBe('America/Sao_Paulo');
  });
});

describe('sources', () => {
  it('gives each setting the defaults file, the --config file or the variable (a secret: its _FILE form)', () => {
    const readFile = (path: string): string => (path === '/run/key' ? 'k-123\n' : withFile('delivery:\n  maxQueued: 10\n')(path));
    const { config, sources } = loadConfigWithSources({
      env: { CARRIER_SYNC_SPOOL_DIR: '/srv/spool', CARRIER_SYNC_CARRIER_KEY_FILE: '/run/key', LANG: 'pt_BR.UTF-8' },
      configPath: '/etc/cs.yaml',
      readFile,
    });
    expect(config.api.carrierKey).toBe('k-123');
    expect(sources.get('spool.dir')).toEqual({ kind: 'variable', variable: 'CARRIER_SYNC_SPOOL_DIR' });
    expect(sources.get('delivery.maxQueued')).toEqual({ kind: 'file', file: '/etc/cs.yaml' });
    expect(sources.get('delivery.ratePerMinute')).toEqual({ kind: 'default', file: DEFAULT_CONFIG_PATH });
    expect(sources.get('api.carrierKey')).toEqual({ kind: 'variable', variable: 'CARRIER_SYNC_CARRIER_KEY_FILE' });
    expect(sources.get('api.sellerGroupKey')).toEqual({ kind: 'default', file: DEFAULT_CONFIG_PATH });
    expect(sources.get('lang')).toEqual({ kind: 'variable', variable: 'LANG' });
  });
});
