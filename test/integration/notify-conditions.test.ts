/**
 * The notification state on a real Redis: transitions claimed once among several "processes"
 * (separate connections) and across a restart, thresholds that must last, the digests' claims, the
 * backlog, spool and disk checks, and the Redis watch across a real redis-server restart. Time is
 * passed in (`nowMs`), never slept on.
 */
import { translator } from '../../src/i18n/translate.js';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { recordRefusal } from '../support/redis.js';
import { createAttemptLog } from '../../src/queue/attempts.js';
import { createAuthGate } from '../../src/gate/auth-gate.js';
import { createKeys, ITEM_KINDS } from '../../src/store/keys.js';
import { createLease } from '../../src/store/lease.js';
import { createRateLimiter } from '../../src/gate/limiter.js';
import { openQueues } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { countActivity } from '../../src/store/activity.js';
import { createStats } from '../../src/store/stats.js';
import { checkApiKey, checkBacklog, checkDisk, checkMoves, checkSpools, type ConditionSources } from '../../src/notify/conditions.js';
import { takeDeadLetterDigest, takeRefusalDigest } from '../../src/notify/digests.js';
import { createEpisodes } from '../../src/notify/episodes.js';
import { watchRedis, type RedisOutage } from '../../src/notify/redis-watch.js';
import { startOwnRedis } from '../support/own-redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('notify');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'notify-test');
const others = [connectRedis(testRedisUrl(), 'notify-test-2'), connectRedis(testRedisUrl(), 'notify-test-3')];
const config = loadConfig({ env: {} });
const queues = openQueues(redis, prefix, config.delivery);

afterAll(async () => {
  await queues.close();
  for (const connection of [redis, ...others]) await closeRedis(connection);
  await cleanupPrefix(prefix);
});

const T0 = Date.parse('2026-11-25T08:00:00Z');
const condition = (): string => `c-${randomBytes(4).toString('hex')}`;

describe('transitions', () => {
  it('of three processes seeing the same change at once, exactly one sends firing, then exactly one resolved', async () => {
    const processes = [redis, ...others].map((connection) => createEpisodes(connection, keys));
    const name = condition();
    const firing = await Promise.all(processes.map((p) => p.observe(name, undefined, true, 0, T0)));
    expect(firing.filter((t) => t !== null)).toHaveLength(1);
    expect(firing.find((t) => t !== null)).toMatchObject({ state: 'firing', sinceMs: T0 });
    // Still bad at the next checks: nothing more.
    expect(await Promise.all(processes.map((p) => p.observe(name, undefined, true, 0, T0 + 5000)))).toEqual([null, null, null]);
    const resolved = await Promise.all(processes.map((p) => p.observe(name, undefined, false, 0, T0 + 10_000)));
    expect(resolved.filter((t) => t !== null)).toHaveLength(1);
    expect(resolved.find((t) => t !== null)).toMatchObject({ state: 'resolved', episode: firing.find((t) => t !== null)?.episode, sinceMs: T0 });
  });

  it('a restarted process neither repeats firing nor forgets resolved; a new episode gets a new id', async () => {
    const name = condition();
    const first = await createEpisodes(redis, keys).observe(name, 'spool-a', true, 0, T0);
    const restarted = createEpisodes(others[0]!, keys);
    expect(await restarted.observe(name, 'spool-a', true, 0, T0 + 1000)).toBeNull();
    expect(await restarted.observe(name, 'spool-a', false, 0, T0 + 2000)).toMatchObject({ state: 'resolved', episode: first?.episode });
    expect(await restarted.observe(name, 'spool-a', false, 0, T0 + 3000)).toBeNull();
    const again = await restarted.observe(name, 'spool-a', true, 0, T0 + 4000);
    expect(again?.state).toBe('firing');
    expect(again?.episode).not.toBe(first?.episode);
    // Another subject of the same condition is its own episode.
    expect(await restarted.observe(name, 'spool-b', false, 0, T0 + 4000)).toBeNull();
  });

  it('a condition that must last fires only once it lasted, dated from when it began; a good check in between starts over', async () => {
    const episodes = createEpisodes(redis, keys);
    const name = condition();
    expect(await episodes.observe(name, undefined, true, 120_000, T0)).toBeNull();
    expect(await episodes.observe(name, undefined, true, 120_000, T0 + 119_999)).toBeNull();
    expect(await episodes.observe(name, undefined, false, 120_000, T0 + 120_000)).toBeNull();
    expect(await episodes.observe(name, undefined, true, 120_000, T0 + 130_000)).toBeNull();
    expect(await episodes.observe(name, undefined, true, 120_000, T0 + 250_000)).toMatchObject({ state: 'firing', sinceMs: T0 + 130_000 });
  });
});

describe('the refused-file digest', () => {
  const options = { periodMs: 60_000, sampleIds: 2, overviewUrl: 'http://wh:8080/ui', lookBackMs: 5000 };

  it('waits a period after the first new refusal, is taken by one caller only, then has nothing to say', async () => {
    const own = { redis, keys: createKeys(uniquePrefix('refusals')), t: translator('en') };
    expect(await takeRefusalDigest(own, options, T0)).toBeNull(); // the first look marks the start
    for (const [i, code] of ['LABEL_NOT_PDF', 'LABEL_NOT_PDF', 'LABEL_NOT_PDF', 'CTE_NOT_XML'].entries()) {
      await recordRefusal(
        redis,
        own.keys,
        { at: new Date(T0 + 1000 + i).toISOString(), kind: code.startsWith('CTE') ? 'cte' : 'labels', file: `f${i}`, code, reason: 'r' },
        T0 + 1000 + i,
      );
    }
    expect(await takeRefusalDigest(own, options, T0 + 2000)).toBeNull(); // the period starts
    expect(await takeRefusalDigest(own, options, T0 + 61_999)).toBeNull();
    const callers = [redis, ...others].map((connection) => takeRefusalDigest({ redis: connection, keys: own.keys, t: own.t }, options, T0 + 62_000));
    const taken = (await Promise.all(callers)).filter((words) => words !== null);
    expect(taken).toHaveLength(1);
    expect(taken[0]?.details).toMatchObject({
      total: 4,
      groups: [
        { kind: 'labels', code: 'LABEL_NOT_PDF', count: 3, sample: ['f2', 'f1'] },
        { kind: 'cte', code: 'CTE_NOT_XML', count: 1, sample: ['f3'] },
      ],
      overview: 'http://wh:8080/ui',
    });
    expect(await takeRefusalDigest(own, options, T0 + 200_000)).toBeNull();
    await cleanupPrefix(own.keys.refusalCounts.split(':')[0]!);
  });

  it('says how many of the files refused were events files written to after their records were sent, not "never sent"', async () => {
    const own = { redis, keys: createKeys(uniquePrefix('refusals-sent')), t: translator('en') };
    expect(await takeRefusalDigest(own, options, T0)).toBeNull();
    for (const [i, code] of ['EVENT_FILE_CHANGED', 'LABEL_NOT_PDF'].entries()) {
      await recordRefusal(
        redis,
        own.keys,
        { at: new Date(T0 + 1000 + i).toISOString(), kind: code.startsWith('EVENT') ? 'events' : 'labels', file: `f${i}`, code, reason: 'r' },
        T0 + 1000 + i,
      );
    }
    expect(await takeRefusalDigest(own, options, T0 + 2000)).toBeNull();
    const words = await takeRefusalDigest(own, options, T0 + 62_000);
    expect(words?.summary).toBe(
      '2 files refused locally and moved to failed/; 1 of them was an events file written to after its records were sent (drop it again to send the rest)',
    );
    expect(words?.summary).not.toContain('never sent');
    expect(translator('pt-BR')('notify.refused.summarySent', { total: 2, sent: 2 })).toBe(
      '2 arquivos recusados localmente e movidos para failed/; 2 deles eram arquivos de eventos escritos depois que os seus registros foram enviados (solte cada um de novo para enviar o resto)',
    );
    await cleanupPrefix(own.keys.refusalCounts.split(':')[0]!);
  });
});

describe('the dead-letter digest', () => {
  it('waits a period after the first new dead letter, is taken by one of three callers, groups by kind and code', async () => {
    const own = uniquePrefix('dlq');
    const ownKeys = createKeys(own);
    const ownQueues = openQueues(redis, own, config.delivery);
    const sources = { redis, keys: ownKeys, queues: ownQueues, attempts: createAttemptLog(redis, ownKeys), t: translator('en') };
    const options = { periodMs: 60_000, sampleIds: 3, overviewUrl: null };
    try {
      // The first look marks where digests begin: letters before it are not news.
      const startMs = Date.now();
      expect(await takeDeadLetterDigest(sources, options, startMs)).toBeNull();
      const worker = new Worker(
        ownQueues.items.label.name,
        async (job) => {
          const deliveryId = String((job.data as { deliveryId: string }).deliveryId);
          // A job failed by a real MOVED reply of Redis is no dead letter (issue 44): not in the digest.
          if (deliveryId === 'moved') await redis.eval('return redis.error_reply(ARGV[1])', 0, 'MOVED 7684 127.0.0.1:46093');
          throw new UnrecoverableError(`API_REJECTED: ${deliveryId} refused`);
        },
        { connection: redis, prefix: own, autorun: true },
      );
      try {
        for (let i = 0; i < 4; i++) await ownQueues.items.label.add('label', { kind: 'label', deliveryId: `d-${i}` } as never, { attempts: 1 });
        await ownQueues.items.label.add('label', { kind: 'label', deliveryId: 'moved' } as never, { attempts: 1 });
        await waitFor(async () => (await ownQueues.items.label.getFailedCount()) === 5, { what: 'four dead letters and a job failed by MOVED' });
      } finally {
        await worker.close();
      }
      const lastMs = Date.now();
      expect(await takeDeadLetterDigest(sources, options, lastMs)).toBeNull(); // the period has not passed
      const callers = [redis, ...others].map((connection) => takeDeadLetterDigest({ ...sources, redis: connection }, options, lastMs + 60_000));
      const taken = (await Promise.all(callers)).filter((words) => words !== null);
      expect(taken).toHaveLength(1);
      expect(taken[0]?.details).toMatchObject({ total: 4, groups: [{ kind: 'label', code: 'API_REJECTED', count: 4 }] });
      expect((taken[0]?.details['groups'] as Array<{ sample: string[] }>)[0]?.sample).toHaveLength(3);
      expect(taken[0]?.details).not.toHaveProperty('overview');
      expect(await takeDeadLetterDigest(sources, options, lastMs + 600_000)).toBeNull();
    } finally {
      await ownQueues.close();
      await cleanupPrefix(own);
    }
  });
});

describe('checks', () => {
  const limiterKeys = { windowKey: `${prefix}:limiter:t`, pauseKey: `${prefix}:pause:t` };
  const limiter = createRateLimiter(redis, { ...limiterKeys, ratePerMinute: 100, windowMarginMs: 0 });
  const sources: ConditionSources = {
    redis,
    keys,
    queues,
    stats: createStats(redis, keys.stats),
    authGate: createAuthGate(
      redis,
      keys,
      ITEM_KINDS.map((kind) => queues.items[kind]),
    ),
    limiter,
    ratePerMinute: 100,
    spoolDir: tmpdir(),
    notify: { ...config.notify, backlogStuckMinutes: 15 },
    t: translator('en'),
  };

  it('api-key-refused follows the 401 gate', async () => {
    expect((await checkApiKey(sources)).isBad).toBe(false);
    await sources.authGate.trip({ at: new Date(T0).toISOString(), endpoint: 'label', message: 'invalid key' });
    const observation = await checkApiKey(sources);
    expect(observation).toMatchObject({
      isBad: true,
      firing: { details: { endpoint: 'label', reason: 'the API answered HTTP 401 to a label sent: “invalid key”' } },
    });
    await sources.authGate.clear();
    expect((await checkApiKey(sources)).isBad).toBe(false);
  });

  it('backlog-stuck: items waiting and none finished for the threshold, but not while a 429 holds sending', async () => {
    await queues.items.label.pause(); // no worker here anyway; the jobs just wait
    await queues.items.label.add('label', { kind: 'label', deliveryId: 'd-1' } as never);
    expect((await checkBacklog(sources, T0))?.isBad).toBe(false);
    expect((await checkBacklog(sources, T0 + 14 * 60_000))?.isBad).toBe(false);
    const stuck = await checkBacklog(sources, T0 + 15 * 60_000);
    expect(stuck).toMatchObject({ isBad: true, firing: { details: { waiting: { label: 1, cte: 0, collecting: 0 } } } });
    // Something finished: the clock starts again.
    await sources.stats.add('sent', 'cte');
    expect((await checkBacklog(sources, T0 + 16 * 60_000))?.isBad).toBe(false);
    expect((await checkBacklog(sources, T0 + 31 * 60_000))?.isBad).toBe(true);
    // A 429 pause is a normal hold.
    await limiter.pause(60_000);
    expect((await checkBacklog(sources, T0 + 32 * 60_000))?.isBad).toBe(false);
    await redis.del(limiterKeys.pauseKey);
    expect((await checkBacklog(sources, T0 + 46 * 60_000))?.isBad).toBe(false);
    expect((await checkBacklog(sources, T0 + 47 * 60_000))?.isBad).toBe(true);
    await queues.items.label.obliterate({ force: true });
    expect((await checkBacklog(sources, T0 + 48 * 60_000))?.isBad).toBe(false);
  });

  it('backlog-stuck: items retried through an unavailable API wait delayed and count while requests are made; events dated in the future alone do not', async () => {
    const t = T0 + 100 * 60_000;
    await queues.items.collecting.add('collecting', { kind: 'collecting', deliveryId: 'd-2' } as never, { delay: 3_600_000 });
    // Delayed, no request in the period: an event dated in the future, waiting on purpose.
    expect((await checkBacklog(sources, t))?.isBad).toBe(false);
    expect((await checkBacklog(sources, t + 16 * 60_000))?.isBad).toBe(false);
    // Requests are made and none finishes (the API answers 503 to each): the delayed item counts.
    await countActivity(redis, keys, 'requests', t + 17 * 60_000);
    expect(await checkBacklog(sources, t + 17 * 60_000)).toMatchObject({ isBad: false, firing: { details: { waiting: { collecting: 1 } } } });
    await countActivity(redis, keys, 'requests', t + 30 * 60_000);
    expect((await checkBacklog(sources, t + 32 * 60_000))?.isBad).toBe(true);
    await queues.items.collecting.obliterate({ force: true });
    expect((await checkBacklog(sources, t + 33 * 60_000))?.isBad).toBe(false);
  });

  it('spool-unwatched: a known spool without a lease holder is bad, with one it is good', async () => {
    await redis.sadd(keys.spools, 'spool-x');
    const [unwatched] = await checkSpools(sources);
    expect(unwatched).toMatchObject({ condition: 'spool-unwatched', subject: 'spool-x', isBad: true, forMs: 120_000 });
    await createLease(redis, keys.spoolLease('spool-x')).acquire({ id: 'p1', host: 'wh-box-2', pid: 42, since: new Date(T0).toISOString() }, 10_000);
    const [watched] = await checkSpools(sources);
    expect(watched).toMatchObject({ isBad: false, resolved: { details: { spoolId: 'spool-x', host: 'wh-box-2', pid: 42 } } });
  });

  it('spool-moves-failing: a spool with files waiting for a move retry, or given up, is bad; with none it is good', async () => {
    await redis.sadd(keys.spools, 'spool-m');
    const retry = `${keys.outcomes('spool-m')}:retry`;
    const good = (await checkMoves(sources)).find((observation) => observation.subject === 'spool-m');
    expect(good).toMatchObject({ condition: 'spool-moves-failing', isBad: false, forMs: 15 * 60_000 });
    await redis.zadd(retry, T0 + 60_000, JSON.stringify({ jobId: 'j-1' }), T0 + 120_000, JSON.stringify({ jobId: 'j-2' }));
    const bad = (await checkMoves(sources)).find((observation) => observation.subject === 'spool-m');
    expect(bad).toMatchObject({ isBad: true, firing: { details: { spoolId: 'spool-m', retrying: 2, failed: 0 } } });
    expect(bad?.firing.summary).toBe('Files of spool spool-m could not be moved to archive/ or failed/ for 15 minutes: 2 files wait in .inflight/');
    const pt = (await checkMoves({ ...sources, t: translator('pt-BR') })).find((observation) => observation.subject === 'spool-m');
    expect(pt?.firing.summary).toBe(
      'Arquivos do spool spool-m não puderam ser movidos para archive/ ou failed/ por 15 minutos: 2 arquivos aguardam em .inflight/',
    );
    await redis.del(retry);
    expect((await checkMoves(sources)).find((observation) => observation.subject === 'spool-m')?.isBad).toBe(false);
    expect(await checkMoves({ ...sources, notify: { ...sources.notify, movesFailingMinutes: null } })).toEqual([]);
  });

  it('spool-disk-low compares statfs with both bounds, and says nothing where the spool is not mounted', async () => {
    expect((await checkDisk({ ...sources, notify: { ...sources.notify, diskLow: { minFreePercent: 0, minFreeBytes: 0 } } }))?.isBad).toBe(false);
    const low = await checkDisk({ ...sources, notify: { ...sources.notify, diskLow: { minFreePercent: 100.1, minFreeBytes: 0 } } });
    expect(low).toMatchObject({ condition: 'spool-disk-low', isBad: true });
    expect(low?.firing.summary).toMatch(/free \(\d/);
    expect(await checkDisk({ ...sources, spoolDir: join(tmpdir(), `absent-${randomBytes(4).toString('hex')}`) })).toBeNull();
  });
});

describe('the Redis watch', () => {
  it('reports an outage past the threshold once, and its end once, across a real redis-server restart', async () => {
    const own = await startOwnRedis();
    const connection = connectRedis(own.url, 'notify-watch-test');
    const firing: RedisOutage[] = [];
    const resolved: RedisOutage[] = [];
    const watch = watchRedis(connection, { thresholdMs: 100, now: () => Date.now(), onFiring: (o) => firing.push(o), onResolved: (o) => resolved.push(o) });
    try {
      await connection.ping();
      await own.restart();
      await waitFor(() => resolved.length === 1, { timeoutMs: 15_000, what: 'the resolved report' });
      expect(firing).toHaveLength(1);
      expect(resolved[0]!.untilMs! - resolved[0]!.sinceMs).toBeGreaterThanOrEqual(100);
      expect(await connection.ping()).toBe('PONG');
      expect(firing).toHaveLength(1);
    } finally {
      watch.close();
      await closeRedis(connection);
      await own.close();
    }
  });
});
