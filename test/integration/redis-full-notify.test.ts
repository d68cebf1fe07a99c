/**
 * The `redis-full` notification across processes (notify/redis-full.ts), on a real Redis, under
 * random interleavings of each process's own episodes and checks: a Redis at its limit flaps, and
 * one process's episode can end while another's begins. Each process has a health of the test's
 * (an episode is started and ended by the test), a clock of the test's, and its own connection.
 *
 * Promised (README, "Notifications"): one `firing` and one `resolved` per deployment episode;
 * `resolved` only once no process has seen writes refused for the calm hold; a refusal seen by a
 * process is always covered by a `firing` sent and not yet resolved; every episode is resolved
 * once all is calm.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { Notification } from '../../src/notify/message.js';
import { watchRedisFull, type RedisFullWatch } from '../../src/notify/redis-full.js';
import type { Sender } from '../../src/notify/sender.js';
import { createKeys } from '../../src/store/keys.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import type { RedisEpisode, RedisHealth } from '../../src/store/redis-health.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const PROCESSES = 3;
const HOLD_MS = 5000;
const T0 = Date.parse('2026-11-26T08:00:00Z');
const connections = Array.from({ length: PROCESSES }, (_, i) => connectRedis(testRedisUrl(), `redis-full-notify-${i}`));
const prefixes: string[] = [];

// A watch checks nothing until its connection is ready.
beforeAll(async () => {
  await Promise.all(connections.map((connection) => connection.ping()));
});

afterAll(async () => {
  for (const connection of connections) await closeRedis(connection);
  for (const prefix of prefixes) await cleanupPrefix(prefix);
});

/** A process's health as far as the watch reads it: an episode the test starts and ends. */
function healthOf(state: { episode: RedisEpisode | null }): RedisHealth {
  return {
    writesRefused: () => state.episode,
    current: () => state.episode,
    onFailoverEnded: () => undefined,
  } as unknown as RedisHealth;
}

/** Processes of one deployment (a fresh key prefix), each with its own health and connection; one clock and one outbox. */
function deployment(count: number): {
  states: Array<{ episode: RedisEpisode | null }>;
  watches: RedisFullWatch[];
  sent: Notification[];
  clock: { now: number };
} {
  const prefix = uniquePrefix('redis-full');
  prefixes.push(prefix);
  const keys = createKeys(prefix);
  const clock = { now: T0 };
  const sent: Notification[] = [];
  const sender = { send: (n: Notification) => sent.push(n) } as unknown as Sender;
  const states = Array.from({ length: count }, () => ({ episode: null as RedisEpisode | null }));
  const watches = states.map((state, i) =>
    watchRedisFull(connections[i]!, keys, healthOf(state), sender, { host: `p${i}`, version: 'test' }, () => clock.now, silentLogger, { calmHoldMs: HOLD_MS }),
  );
  return { states, watches, sent, clock };
}

type Step = { kind: 'toggle'; process: number } | { kind: 'tick'; process: number } | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('toggle' as const), process: fc.nat(PROCESSES - 1) }),
  fc.record({ kind: fc.constant('tick' as const), process: fc.nat(PROCESSES - 1) }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 4000 }) }),
);

it('sends one firing and one resolved per deployment episode, whatever the order of episodes and checks', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 60 }), async (steps) => {
      const { states, watches, sent, clock } = deployment(PROCESSES);
      const outstanding = (): boolean => sent.filter((n) => n.condition === 'redis-full').at(-1)?.state === 'firing';
      /** When a process last checked while it saw writes refused. */
      let lastRefusedCheck = -Infinity;
      const check = async (i: number): Promise<void> => {
        const before = sent.length;
        await watches[i]!.tick();
        if (states[i]!.episode !== null) {
          lastRefusedCheck = clock.now;
          expect(outstanding(), 'a process that sees writes refused is covered by a firing').toBe(true);
        }
        for (const n of sent.slice(before)) {
          if (n.state !== 'resolved') continue;
          expect(states.every((s) => s.episode === null)).toBe(true);
          expect(clock.now - lastRefusedCheck, 'resolved only after the calm hold').toBeGreaterThanOrEqual(HOLD_MS);
        }
      };

      // Every process starts while Redis is well (the token is written then).
      for (let i = 0; i < PROCESSES; i++) await check(i);
      const lastCheck = states.map(() => clock.now);
      const checkNow = async (i: number): Promise<void> => {
        lastCheck[i] = clock.now;
        await check(i);
      };
      for (const s of steps) {
        if (s.kind === 'tick') await checkNow(s.process);
        else if (s.kind === 'toggle') {
          // A change of health is checked at once (notify-role.ts: onChange).
          const state = states[s.process]!;
          state.episode = state.episode === null ? { kind: 'writes-refused', since: clock.now, code: 'OOM', message: 'OOM command not allowed' } : null;
          await checkNow(s.process);
        } else {
          // Time passes in steps of at most 1 s; a process checks at least every half hold meanwhile
          // (the daemon: every check interval, half the hold or less).
          for (let left = s.ms; left > 0; left -= 1000) {
            clock.now += Math.min(1000, left);
            for (let i = 0; i < PROCESSES; i++) if (clock.now - lastCheck[i]! > HOLD_MS / 2) await checkNow(i);
          }
        }
      }
      // All calm: checks go on past the hold, and the episode, if any, is resolved.
      for (const state of states) state.episode = null;
      for (let round = 0; round < 6; round++) {
        clock.now += HOLD_MS / 2;
        for (let i = 0; i < PROCESSES; i++) await check(i);
      }

      const told = sent.map((n) => n.state);
      expect(told, 'firing and resolved alternate, starting with firing').toEqual(told.map((_, i) => (i % 2 === 0 ? 'firing' : 'resolved')));
      expect(told.length % 2, 'the last episode is resolved').toBe(0);
      for (const watch of watches) watch.close();
    }),
    { numRuns: Number(process.env['REDIS_FULL_RUNS'] ?? 60) },
  );
});

it('keeps one episode when one process resolves its own while another still sees writes refused', async () => {
  const { states, watches, sent, clock } = deployment(2);
  const [a, b] = states as [{ episode: RedisEpisode | null }, { episode: RedisEpisode | null }];
  const [watchA, watchB] = watches as [RedisFullWatch, RedisFullWatch];
  await watchA.tick();
  await watchB.tick();
  // The case seen in CI: A's episode ends (its probes got through) just before B's begins.
  a.episode = { kind: 'writes-refused', since: clock.now, code: 'OOM', message: 'OOM' };
  await watchA.tick();
  clock.now += 2000;
  a.episode = null;
  await watchA.tick();
  b.episode = { kind: 'writes-refused', since: clock.now, code: 'OOM', message: 'OOM' };
  await watchB.tick();
  clock.now += 2000;
  b.episode = null;
  await watchB.tick();
  for (let round = 0; round < 4; round++) {
    clock.now += HOLD_MS / 2;
    await watchA.tick();
    await watchB.tick();
  }
  expect(sent.map((n) => `${n.host} ${n.state}`)).toEqual(['p0 firing', 'p0 resolved']);
  // It lasted at least the two episodes (4 s); the owner counts up to the start of the hold that held.
  expect((sent[1]?.details as { lastedSec: number }).lastedSec).toBeGreaterThanOrEqual(4);
  watchA.close();
  watchB.close();
});
