import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { SyncError } from '../../src/errors.js';

describe('loadConfig', () => {
  it('gives the documented defaults with an empty environment', () => {
    const config = loadConfig({ env: {} });
    expect(config.api.url).toBeNull();
    expect(config.redis.url).toBeNull();
    expect(config.prefix).toBe('carrier-sync');
    expect(config.spool.dir).toBe('./spool');
    expect(config.http.port).toBe(8080);
    expect(config.delivery.ratePerMinute).toBe(300);
    expect(config.delivery.maxAttempts).toBe(8);
    expect(config.delivery.backoffMs).toBe(1000);
    expect(config.delivery.maxQueued).toBe(5000);
    expect(config.spool.writeStableMs).toBe(500);
    expect(config.log.level).toBe('info');
    expect(config.redis.allowEviction).toBe(false);
    expect(Object.isFrozen(config.delivery)).toBe(true);
  });

  it('lets environment variables override the files', () => {
    const config = loadConfig({
      env: {
        CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: '120',
        CARRIER_SYNC_PREFIX: 'wh1',
        LOG_LEVEL: 'debug',
        CARRIER_SYNC_USE_POLLING: 'true',
        CARRIER_SYNC_ALLOW_EVICTING_REDIS: 'true',
      },
    });
    expect(config.redis.allowEviction).toBe(true);
    expect(config.delivery.ratePerMinute).toBe(120);
    expect(config.prefix).toBe('wh1');
    expect(config.log.level).toBe('debug');
    expect(config.spool.usePolling).toBe(true);
  });

  it('layers a --config file between the defaults and the environment', () => {
    const files: Record<string, string> = { '/etc/cs.yaml': 'delivery:\n  maxQueued: 10\n  ratePerMinute: 50\n' };
    const readFile = (path: string): string => files[path] ?? loadDefault(path);
    const config = loadConfig({ env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: '60' }, configPath: '/etc/cs.yaml', readFile });
    expect(config.delivery.maxQueued).toBe(10);
    expect(config.delivery.ratePerMinute).toBe(60);
  });

  it('names the setting and the variable when a value is wrong', () => {
    expect(() => loadConfig({ env: { CARRIER_SYNC_HTTP_PORT: 'eighty' } })).toThrowError(/http\.port \[CARRIER_SYNC_HTTP_PORT\]/);
  });

  it('reports every problem in one line', () => {
    try {
      loadConfig({ env: { CARRIER_SYNC_HTTP_PORT: '-1', CARRIER_SYNC_MAX_ATTEMPTS: '0' } });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(SyncError);
      const message = (error as SyncError).message;
      expect(message).not.toContain('\n');
      expect(message).toContain('http.port');
      expect(message).toContain('delivery.maxAttempts');
    }
  });

  it('requires the carrier key once an API URL is set, without echoing any secret', () => {
    expect(() => loadConfig({ env: { CARRIER_SYNC_API_URL: 'https://api.example.test' } })).toThrowError(/CARRIER_SYNC_CARRIER_KEY is required/);
    const config = loadConfig({ env: { CARRIER_SYNC_API_URL: 'https://api.example.test', CARRIER_SYNC_CARRIER_KEY: 's3cr3t' } });
    expect(config.api.carrierKey).toBe('s3cr3t');
  });

  it('reads a secret from the file named by <VAR>_FILE', () => {
    const readFile = (path: string): string => (path === '/run/secrets/key' ? 'from-file\n' : loadDefault(path));
    const config = loadConfig({ env: { CARRIER_SYNC_CARRIER_KEY_FILE: '/run/secrets/key' }, readFile });
    expect(config.api.carrierKey).toBe('from-file');
  });

  it('refuses a secret written into a config file', () => {
    const readFile = (path: string): string => (path === '/etc/cs.yaml' ? 'api:\n  carrierKey: leaked\n' : loadDefault(path));
    expect(() => loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile })).toThrowError(/is a secret; set CARRIER_SYNC_CARRIER_KEY/);
  });

  it('refuses unknown settings', () => {
    const readFile = (path: string): string => (path === '/etc/cs.yaml' ? 'spool:\n  writeStabelMs: 10\n' : loadDefault(path));
    expect(() => loadConfig({ env: {}, configPath: '/etc/cs.yaml', readFile })).toThrowError(/writeStabelMs/);
  });
});

import { readFileSync } from 'node:fs';
function loadDefault(path: string): string {
  return readFileSync(path, 'utf8');
}
