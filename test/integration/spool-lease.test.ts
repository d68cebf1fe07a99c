/**
 * The spool lease on a real Redis: the Lua primitives (one holder among many, renew, expiry,
 * compare-and-delete) and the keeper around them (standby, takeover, fencing when the holder's
 * Redis stops answering or its lease is taken from it).
 */
import { randomBytes } from 'node:crypto';
import { createServer, Socket, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../src/log.js';
import { createKeys } from '../../src/store/keys.js';
import { createLease, type LeaseHolder } from '../../src/store/lease.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { holdSpoolLease } from '../../src/spool/lease/lease-holder.js';
import type { Fence, HeldSession, SpoolLease } from '../../src/spool/lease/spool-lease.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('lease');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'lease-test');
const opened: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (opened.length > 0) await opened.pop()!();
});
afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

const holderNamed = (name: string): LeaseHolder => ({
  id: `${name}-${randomBytes(4).toString('hex')}`,
  host: `host-${name}`,
  pid: 1000,
  since: new Date().toISOString(),
});
const freshKey = (): string => keys.spoolLease(randomBytes(4).toString('hex'));

describe('lease primitives', () => {
  it('of ten contenders at once exactly one holds the lease, and all of them see that one', async () => {
    const lease = createLease(redis, freshKey());
    const contenders = Array.from({ length: 10 }, (_, i) => holderNamed(`c${i}`));
    const results = await Promise.all(contenders.map((holder) => lease.acquire(holder, 10_000)));
    const winners = results.filter((r) => r.isAcquired);
    expect(winners).toHaveLength(1);
    const winnerId = winners[0]!.holder!.id;
    expect(new Set(results.map((r) => r.holder?.id))).toEqual(new Set([winnerId]));
    expect((await lease.read())?.id).toBe(winnerId);
  });

  it('renews only for its holder; the holder taking it again keeps its since', async () => {
    const lease = createLease(redis, freshKey());
    const a = holderNamed('a');
    const b = holderNamed('b');
    expect((await lease.acquire(a, 1000)).isAcquired).toBe(true);
    expect(await lease.renew(b.id, 60_000)).toBe(false);
    expect((await lease.read())!.ttlMs).toBeLessThanOrEqual(1000);
    expect(await lease.renew(a.id, 60_000)).toBe(true);
    expect((await lease.read())!.ttlMs).toBeGreaterThan(1000);
    const again = await lease.acquire({ ...a, since: 'later' }, 60_000);
    expect(again).toMatchObject({ isAcquired: true, holder: { id: a.id, since: a.since } });
  });

  it('expires when not renewed: the old holder cannot renew it, another can take it', async () => {
    const lease = createLease(redis, freshKey());
    const a = holderNamed('a');
    const b = holderNamed('b');
    expect((await lease.acquire(a, 200)).isAcquired).toBe(true);
    expect((await lease.acquire(b, 200)).isAcquired).toBe(false);
    await waitFor(async () => (await lease.read()) === null, { what: 'the lease to expire', timeoutMs: 5000 });
    expect(await lease.renew(a.id, 10_000)).toBe(false);
    expect((await lease.acquire(b, 10_000)).isAcquired).toBe(true);
    expect(await lease.renew(a.id, 10_000)).toBe(false);
    expect((await lease.read())?.id).toBe(b.id);
  });

  it("release is compare-and-delete: another holder's lease is left alone", async () => {
    const lease = createLease(redis, freshKey());
    const a = holderNamed('a');
    const b = holderNamed('b');
    await lease.acquire(b, 10_000);
    expect(await lease.release(a.id)).toBe(false);
    expect((await lease.read())?.id).toBe(b.id);
    expect(await lease.release(b.id)).toBe(true);
    expect(await lease.read()).toBeNull();
  });

  it('a value that is not a holder is never taken for one', async () => {
    const key = freshKey();
    await redis.set(key, 'not json', 'PX', 10_000);
    const lease = createLease(redis, key);
    expect(await lease.acquire(holderNamed('a'), 10_000)).toEqual({ isAcquired: false, holder: null });
    expect(await lease.renew('anything', 10_000)).toBe(false);
    expect(await lease.read()).toBeNull();
  });
});

/** A holder's work as the keeper sees it: which fence it got, when it started and stopped. */
interface FakeSession extends HeldSession {
  fence: Fence;
  stops: Array<{ isShutdown: boolean }>;
}

interface Keeper {
  name: string;
  held: SpoolLease<FakeSession>;
  sessions: FakeSession[];
  logs: Array<{ msg: string; [field: string]: unknown }>;
}

function captureLogger(): { logger: Logger; logs: Keeper['logs'] } {
  const logs: Keeper['logs'] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Keeper['logs'][number]);
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), logs };
}

async function startKeeper(name: string, key: string, connection: RedisConnection, leaseMs: number, onStart?: (fence: Fence) => void): Promise<Keeper> {
  const { logger, logs } = captureLogger();
  const sessions: FakeSession[] = [];
  const held = await holdSpoolLease<FakeSession>({
    lease: createLease(connection, key),
    leaseMs,
    logger,
    async start(fence) {
      onStart?.(fence);
      const session: FakeSession = {
        fence,
        stops: [],
        async stop(options) {
          session.stops.push(options);
        },
      };
      sessions.push(session);
      return session;
    },
  });
  opened.push(() => held.close());
  return { name, held, sessions, logs };
}

/**
 * A TCP relay to the test Redis that can be frozen: while frozen, nothing passes either way (the
 * connection stays open, replies just never come), as when a network path or a host stalls.
 */
async function startRelay(): Promise<{ url: string; freeze(): void; close(): Promise<void> }> {
  const target = new URL(testRedisUrl());
  const sockets: Socket[] = [];
  let isFrozen = false;
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(Number(target.port), target.hostname);
    sockets.push(client, upstream);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('data', (chunk) => {
        if (!isFrozen) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    freeze: () => {
      isFrozen = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the keeper', () => {
  it('one of three holds and works; after it closes, one standby takes over and the others keep standing by', async () => {
    const key = freshKey();
    const keepers = await Promise.all(['a', 'b', 'c'].map((name) => startKeeper(name, key, redis, 1500)));
    const holders = keepers.filter((k) => k.held.isHolder());
    expect(holders).toHaveLength(1);
    const first = holders[0]!;
    expect(first.sessions).toHaveLength(1);
    for (const standby of keepers.filter((k) => k !== first)) {
      expect(standby.sessions).toEqual([]);
      expect(standby.logs.map((l) => l.msg)).toContain('standing by: another process holds the spool lease (it watches the spool and moves its files)');
      expect((await standby.held.state()).role).toBe('standby');
    }
    const state = await first.held.state();
    expect(state).toMatchObject({ role: 'holder', holder: { pid: process.pid, isSelf: true } });
    expect(state.holder!.ttlMs).toBeGreaterThan(0);

    // Renewals keep it: the lease's TTL runs down and comes back up, and the holder stays the same.
    let hasRunDown = false;
    await waitFor(
      async () => {
        const ttl = await redis.pttl(key);
        if (ttl < 1100) hasRunDown = true;
        return hasRunDown && ttl > 1300;
      },
      { what: 'a renewal (the TTL back up)', intervalMs: 10 },
    );
    expect(keepers.filter((k) => k.held.isHolder())).toEqual([first]);

    await first.held.close();
    expect(first.sessions[0]!.stops).toEqual([{ isShutdown: true }]);
    expect(first.logs.map((l) => l.msg)).toContain('gave the spool lease up: a standby takes over');
    const next = await waitFor(() => keepers.find((k) => k !== first && k.held.isHolder()), { what: 'a standby to take over', timeoutMs: 5000 });
    expect(keepers.filter((k) => k.held.isHolder())).toEqual([next]);
    expect(keepers.filter((k) => k !== first && k !== next).every((k) => k.sessions.length === 0)).toBe(true);
    expect(next.sessions).toHaveLength(1);
    expect(first.sessions[0]!.fence.isHeld()).toBe(false);
  });

  it('a holder whose Redis stops answering has stopped moving files before a standby takes over', async () => {
    const relay = await startRelay();
    opened.push(() => relay.close());
    const cut = connectRedis(relay.url, 'lease-test-cut');
    cut.on('error', () => {});
    opened.push(() => Promise.resolve(cut.disconnect()));
    const key = freshKey();
    const leaseMs = 1500;
    const a = await startKeeper('a', key, cut, leaseMs);
    expect(a.held.isHolder()).toBe(true);
    const fenceA = a.sessions[0]!.fence;
    /** What A's fence said at the instant B was handed the spool. */
    let fenceAWhenBStarted: boolean | undefined;
    const b = await startKeeper('b', key, redis, leaseMs, () => {
      fenceAWhenBStarted = fenceA.isHeld();
    });
    expect(b.held.isHolder()).toBe(false);

    relay.freeze();
    await waitFor(() => b.held.isHolder(), { what: 'B to take the expired lease', timeoutMs: 10_000 });
    expect(fenceAWhenBStarted).toBe(false);
    expect(a.held.isHolder()).toBe(false);
    expect(() => fenceA.assertHeld()).toThrow(/no longer holds the spool lease/);
    await waitFor(() => a.sessions[0]!.stops.length > 0, { what: "A's work stopped" });
    expect(a.sessions[0]!.stops[0]).toEqual({ isShutdown: false });
    expect(a.logs.find((l) => l.msg === 'lost the spool lease: stopped moving files; standing by')?.['reason']).toMatch(/not renewed/);
  });

  it('a holder whose lease is taken stops within a renewal, and takes the lease again once it is free', async () => {
    const key = freshKey();
    const a = await startKeeper('a', key, redis, 1500);
    expect(a.held.isHolder()).toBe(true);
    await redis.set(key, JSON.stringify(holderNamed('thief')), 'PX', 60_000);
    await waitFor(() => !a.held.isHolder() && a.sessions[0]!.stops.length === 1, { what: 'A to notice', timeoutMs: 3000 });
    expect(a.logs.find((l) => l.msg === 'lost the spool lease: stopped moving files; standing by')?.['reason']).toBe(
      'the lease expired or another process took it',
    );
    expect((await a.held.state()).holder).toMatchObject({ host: 'host-thief', isSelf: false });

    await redis.del(key);
    await waitFor(() => a.held.isHolder(), { what: 'A to take the lease again', timeoutMs: 5000 });
    expect(a.sessions).toHaveLength(2);
    expect(a.sessions[0]!.fence.isHeld()).toBe(false);
    expect(a.sessions[1]!.fence.isHeld()).toBe(true);
  });

  it('a failure to start the work on the first acquisition gives the lease up and rejects', async () => {
    const key = freshKey();
    const { logger } = captureLogger();
    await expect(
      holdSpoolLease({
        lease: createLease(redis, key),
        leaseMs: 1500,
        logger,
        start: () => Promise.reject(new Error('spool folder not writable')),
      }),
    ).rejects.toThrow('spool folder not writable');
    expect(await redis.exists(key)).toBe(0);
  });
});
