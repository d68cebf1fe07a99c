/**
 * Where Redis is, read from the config: one server, Sentinel or Cluster; the combinations that
 * cannot work are refused in one line that names the variables and never repeats a password.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { redisTargetOf } from '../../src/config/redis-target.js';

const targetOf = (env: Record<string, string>) => {
  const config = loadConfig({ env });
  return redisTargetOf(config.redis, config.redis.url);
};

describe('the Redis target', () => {
  it('reads one server with its user, password, db and TLS, and shows only scheme, host, port and db', () => {
    const target = targetOf({ REDIS_URL: 'rediss://app:s%40cret@redis.internal:6380/2' });
    expect(target).toMatchObject({ kind: 'single', username: 'app', password: 's@cret', db: 2, isTls: true, node: { host: 'redis.internal', port: 6380 } });
    expect(target.address).toBe('rediss://redis.internal:6380/2');
  });

  it('finds the primary through sentinels; REDIS_URL gives the data nodes user, password, db and TLS, the sentinels follow its scheme', () => {
    const target = targetOf({
      CARRIER_SYNC_REDIS_SENTINELS: 's1:26379, s2:26380,s3:26381',
      CARRIER_SYNC_REDIS_SENTINEL_NAME: 'orders',
      CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      REDIS_URL: 'rediss://app:data-secret@ignored-host:6379/1',
    });
    expect(target).toMatchObject({
      kind: 'sentinel',
      name: 'orders',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
        { host: 's3', port: 26381 },
      ],
      sentinelPassword: 'sentinel-secret',
      username: 'app',
      password: 'data-secret',
      db: 1,
      isTls: true,
      isSentinelTls: true,
    });
    expect(target.address).toBe('sentinels://s1:26379,s2:26380,s3:26381/orders/1');
    expect(target.address).not.toMatch(/secret/);
  });

  it('takes sentinels without REDIS_URL (no auth, db 0, no TLS), named mymaster by default, and plain-text sentinels written as redis://', () => {
    expect(targetOf({ CARRIER_SYNC_REDIS_SENTINELS: '127.0.0.1:26379' })).toMatchObject({
      kind: 'sentinel',
      name: 'mymaster',
      isTls: false,
      isSentinelTls: false,
      db: 0,
    });
    expect(targetOf({ CARRIER_SYNC_REDIS_SENTINELS: 'redis://a:1,redis://b:2', REDIS_URL: 'rediss://u:p@x:1' })).toMatchObject({
      isTls: true,
      isSentinelTls: false,
    });
  });

  it('reads a cluster seed list, the first node giving user, password and TLS', () => {
    const target = targetOf({ REDIS_URL: 'rediss://u:pw@a:7000,rediss://u:pw@b:7001', CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_PREFIX: '{cs}' });
    expect(target).toMatchObject({ kind: 'cluster', username: 'u', password: 'pw', isTls: true, nodes: [{ port: 7000 }, { port: 7001 }] });
    expect(target.address).toBe('rediss://a:7000,rediss://b:7001');
  });

  it('reaches one server through its Unix socket, with a db and a password, and shows the path and the db only', () => {
    expect(targetOf({ REDIS_URL: 'unix:///run/redis/redis-server.sock' })).toMatchObject({
      kind: 'single',
      socketPath: '/run/redis/redis-server.sock',
      db: 0,
      isTls: false,
      username: undefined,
      password: undefined,
      address: 'unix:///run/redis/redis-server.sock',
    });
    const target = targetOf({ REDIS_URL: 'unix://:s%40cret@localhost/var/run/my%20redis.sock?db=3' });
    expect(target).toMatchObject({ kind: 'single', socketPath: '/var/run/my redis.sock', db: 3, password: 's@cret' });
    expect(target.address).toBe('unix:///var/run/my redis.sock?db=3');
  });

  it.each([
    [{ REDIS_URL: 'unix://redis-host/run/redis.sock' }, /names a Unix socket the wrong way/],
    [{ REDIS_URL: 'unix://:pw-4@localhost/run/' }, /names a Unix socket the wrong way/],
    [{ REDIS_URL: 'unix:///run/redis.sock?db=two' }, /names a Unix socket the wrong way/],
    [
      { REDIS_URL: 'unix:///run/redis.sock', CARRIER_SYNC_REDIS_CLUSTER: 'true', CARRIER_SYNC_PREFIX: '{cs}' },
      /is a Unix socket \(unix:\/\/\), which reaches one server/,
    ],
    [{ REDIS_URL: 'unix://:pw-5@localhost/run/redis.sock', CARRIER_SYNC_REDIS_SENTINELS: 'a:1' }, /is a Unix socket \(unix:\/\/\), which reaches one server/],
    [
      { CARRIER_SYNC_REDIS_SENTINELS: 'a:1', CARRIER_SYNC_REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1', CARRIER_SYNC_PREFIX: '{cs}' },
      /SENTINELS and CARRIER_SYNC_REDIS_CLUSTER exclude each other/,
    ],
    [{ CARRIER_SYNC_REDIS_SENTINELS: 'a' }, /redis\.sentinels\.0 \[CARRIER_SYNC_REDIS_SENTINELS\]|each sentinel is host:port/],
    [{ CARRIER_SYNC_REDIS_SENTINEL_PASSWORD: 'pw-1' }, /SENTINEL_PASSWORD is set but CARRIER_SYNC_REDIS_SENTINELS is not/],
    [{ CARRIER_SYNC_REDIS_SENTINELS: 'a:1', REDIS_URL: 'redis://u:pw-2@a:1,redis://b:2' }, /REDIS_URL names one node/],
    [{ CARRIER_SYNC_REDIS_SENTINELS: 'redis://a:1,rediss://b:2' }, /mixes redis:\/\/ and rediss:\/\//],
    [{ REDIS_URL: 'redis://u:pw-3@a:1,redis://b:2' }, /REDIS_URL lists several nodes: set CARRIER_SYNC_REDIS_CLUSTER=true/],
  ])('refuses %o in one line, without a password', (env, message) => {
    let error: unknown;
    try {
      targetOf(env);
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    const text = (error as Error).message;
    expect(text).toMatch(message);
    expect(text).not.toContain('\n');
    expect(text).not.toMatch(/pw-\d/);
  });
});
