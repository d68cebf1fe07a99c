/**
 * The sentinels' password given as CARRIER_SYNC_REDIS_SENTINEL_PASSWORD_FILE follows its file
 * (issue 45): real sentinels with `requirepass`, a connection made through them with the first
 * password; the sentinels then take only a new one (ACL, as a rotation would) and the file is
 * rewritten in place. The connection's next reconnect asks the sentinels with the new password and
 * reaches the primary again. With the password read at start only it asked with the old one and
 * kept failing ("All sentinels are unreachable"), never ready again.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisTargetOf } from '../../src/config/redis-target.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { startSentinelSet, type SentinelSet } from '../support/redis-topologies.js';
import { waitFor } from '../support/wait.js';

const VARIABLE = 'CARRIER_SYNC_REDIS_SENTINEL_PASSWORD_FILE';
const OLD_PASSWORD = `old-${randomUUID()}`;
const NEW_PASSWORD = `new-${randomUUID()}`;

let set: SentinelSet;
let dir: string;
const connections: RedisConnection[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cs-sentinel-password-'));
  set = await startSentinelSet({ sentinelPassword: OLD_PASSWORD });
}, 60_000);
afterAll(async () => {
  delete process.env[VARIABLE];
  await Promise.all(connections.map((redis) => closeRedis(redis)));
  await set?.close();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

/** A connection to one sentinel with `password`, for the test's own commands. */
function sentinelAdmin(port: number, password: string): Redis {
  const admin = new Redis({ port, host: '127.0.0.1', password, retryStrategy: () => null, maxRetriesPerRequest: 0, lazyConnect: true });
  admin.on('error', () => {});
  connections.push(admin);
  return admin;
}

it('a reconnect after the rotation asks the sentinels with the file’s new password', { timeout: 60_000 }, async () => {
  const file = join(dir, 'sentinel-password');
  await writeFile(file, `${OLD_PASSWORD}\n`);
  process.env[VARIABLE] = file;
  // As the daemon loads it: the value read at start is the config's, the file named beside it.
  const target = redisTargetOf({ cluster: false, sentinels: set.sentinels.split(','), sentinelName: set.name, sentinelPassword: OLD_PASSWORD }, set.url);
  const redis = connectRedis(target, 'sentinel-password-file');
  redis.on('error', () => {});
  connections.push(redis);
  expect(await redis.ping()).toBe('PONG');

  // The rotation: every sentinel takes only the new password now; the file is rewritten in place.
  for (const port of set.sentinelPorts) {
    const admin = sentinelAdmin(port, OLD_PASSWORD);
    await admin.call('ACL', 'SETUSER', 'default', 'resetpass', `>${NEW_PASSWORD}`);
    await expect(admin.call('AUTH', OLD_PASSWORD), 'the old password is refused now').rejects.toThrow(/WRONGPASS/);
  }
  await writeFile(file, `${NEW_PASSWORD}\n`);

  let readyAgain = false;
  redis.once('ready', () => (readyAgain = true));
  redis.disconnect(true); // a reconnect, as after the primary's socket closed
  await waitFor(() => readyAgain, { timeoutMs: 20_000, what: 'the connection ready again through the sentinels' });
  expect(await redis.ping()).toBe('PONG');
  expect(await redis.set(`sentinel-password-file:${randomUUID()}`, 'written', 'EX', 60)).toBe('OK');

  // A duplicate (BullMQ's blocking connections) asks the sentinels with the new password too.
  const duplicate = redis.duplicate();
  duplicate.on('error', () => {});
  connections.push(duplicate);
  expect(await duplicate.ping()).toBe('PONG');
});
