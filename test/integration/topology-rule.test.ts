/**
 * A failover is a promotion, nothing else (issue 35, README "Redis failover", store/topology.ts):
 * against real redis-servers of the test's own, what `status` and the overview read as the last
 * failover after a single Redis restarted (same port and data), after the deployment's data came
 * back on another port (the managed redis-server restarted: test/e2e/managed-redis-restart.test.ts
 * runs the binary), and after a replica was promoted (REPLICAOF NO ONE, as Sentinel does it).
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { singleTarget } from '../../src/config/redis-target.js';
import { createKeys } from '../../src/store/keys.js';
import { describeTopology, notePrimary, readTopology } from '../../src/store/topology.js';
import { localTime } from '../../src/i18n/local-time.js';
import { translator } from '../../src/i18n/translate.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('topology');
const topologyKey = createKeys(prefix).topology;
const servers: OwnRedis[] = [];
const connections: Redis[] = [];

afterEach(async () => {
  for (const connection of connections.splice(0)) connection.disconnect();
  for (const server of servers.splice(0).reverse()) await server.close();
});

async function server(): Promise<{ own: OwnRedis; redis: Redis }> {
  // A replica's first sync at once, not after the default 5 s wait for more replicas.
  const own = await startOwnRedis({ extraArgs: ['--repl-diskless-sync-delay', '0'] });
  servers.push(own);
  const redis = new Redis(own.url, { maxRetriesPerRequest: null });
  connections.push(redis);
  return { own, redis };
}

const note = (redis: Redis, url: string): Promise<boolean> => notePrimary(redis, singleTarget(url), topologyKey, prefix);

describe('the last failover', () => {
  it('a single Redis restarted on its port with its data is not a failover', async () => {
    const { own, redis } = await server();
    expect(await note(redis, own.url)).toBe(false);
    const before = await redis.hget(topologyKey, 'replId');
    await own.restart();
    await waitFor(async () => (await redis.ping()) === 'PONG', { what: 'Redis back' });
    expect(await note(redis, own.url)).toBe(false);
    expect(await redis.hget(topologyKey, 'replId'), 'a restart is a new replication id').not.toBe(before);
    const topology = await readTopology(redis, singleTarget(own.url), topologyKey, prefix);
    expect(topology.lastFailover).toBeNull();
    expect(describeTopology(topology, translator('en'))).toContain('no failover seen');
  });

  it('the same data on another port (the managed redis-server restarted) is not a failover', async () => {
    const [a, b] = [await server(), await server()];
    expect(await note(a.redis, a.own.url)).toBe(false);
    // B holds A's data as a restart on another port would: the topology record included.
    await b.redis.hset(topologyKey, await a.redis.hgetall(topologyKey));
    expect(await note(b.redis, b.own.url)).toBe(false);
    expect((await readTopology(b.redis, singleTarget(b.own.url), topologyKey, prefix)).lastFailover).toBeNull();
  });

  it('a replica promoted (REPLICAOF NO ONE) is a failover, shown in local time', async () => {
    const [a, b] = [await server(), await server()];
    const portOf = (url: string): number => Number(new URL(url).port);
    expect(await note(a.redis, a.own.url)).toBe(false);
    await b.redis.replicaof('127.0.0.1', portOf(a.own.url));
    // The replica holds the primary's topology record, as a promoted one does after a failover.
    await waitFor(async () => (await b.redis.hget(topologyKey, 'primary')) !== null, { what: 'the record replicated' });
    await b.redis.replicaof('NO', 'ONE');
    expect(await note(b.redis, b.own.url)).toBe(true);
    const topology = await readTopology(b.redis, singleTarget(b.own.url), topologyKey, prefix);
    expect(topology.lastFailover?.from).toBe(`127.0.0.1:${portOf(a.own.url)}`);
    expect(topology.lastFailover?.to).toBe(`127.0.0.1:${portOf(b.own.url)}`);
    // Noted again (another process, a reconnect): the same failover, not a second one.
    const at = topology.lastFailover?.at;
    expect(await note(b.redis, b.own.url)).toBe(false);
    expect((await readTopology(b.redis, singleTarget(b.own.url), topologyKey, prefix)).lastFailover?.at).toBe(at);

    const tz = process.env['TZ'];
    process.env['TZ'] = 'America/Sao_Paulo';
    try {
      const line = describeTopology(topology, translator('en'), (iso) => localTime(iso));
      const local = new Date(Date.parse(at!) - 3 * 3_600_000).toISOString();
      expect(line).toContain(`last failover ${local.slice(0, 10)} ${local.slice(11, 19)} -03:00 (from 127.0.0.1:`);
    } finally {
      process.env['TZ'] = tz;
    }
  });
});
