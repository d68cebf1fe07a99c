/**
 * Notifications, started by the scheduler role (and only there): the channels the config turns on,
 * the sender that delivers in the background, the loop that checks the conditions, and the watch on
 * this process' Redis connection. Nothing is started when no channel is configured.
 */
import { hostname } from 'node:os';
import type { Config } from '../../config/schema.js';
import { translator } from '../../i18n/translate.js';
import { isLoopbackHost } from '../../ops/exposure.js';
import type { RateLimiter } from '../../gate/limiter.js';
import { publishChannels, recordSend } from '../../store/notify-record.js';
import { channelsOf } from '../../notify/configured.js';
import { createEpisodes } from '../../notify/episodes.js';
import { durationText, startNotifyLoop } from '../../notify/loop.js';
import { makeNotification, type Origin } from '../../notify/message.js';
import { watchRedisFull } from '../../notify/redis-full.js';
import { watchRedis } from '../../notify/redis-watch.js';
import { createSender, type RetryPolicy, type Sender } from '../../notify/sender.js';
import type { Context } from '../context.js';
import type { Logger } from '../../log.js';
import { appVersion } from '../../version.js';
import { stallReason } from '../../ops/readiness.js';
import type { StallState, Watchdog } from '../watchdog/watchdog.js';

export function originOf(): Origin {
  return { host: hostname(), version: appVersion() };
}

export function retryPolicyOf(notify: Config['notify']): RetryPolicy {
  return { maxAttempts: notify.maxAttempts, baseMs: notify.retryBaseMs, maxMs: notify.retryMaxMs };
}

export async function startNotifications(ctx: Context, limiter: RateLimiter | null, watchdog?: Watchdog): Promise<void> {
  const log = ctx.logger.child({ mod: 'notify' });
  const channels = channelsOf(ctx.config.notify, translator(ctx.config.lang));
  // Published even when empty: the overview must not list channels a previous start had.
  await publishChannels(ctx.redis, ctx.keys, channels);
  if (channels.length === 0) {
    log.debug('no notification channel configured');
    return;
  }
  log.info({ channels: channels.map((c) => `${c.name} ${c.target}`) }, 'notifications on');
  const origin = originOf();
  const sender = startSender(ctx, channels, log);
  await startChecks(ctx, limiter, sender, origin, log);
  watchRedisWrites(ctx, sender, origin, log);
  if (ctx.config.notify.redisUnreachableSec !== null) watchRedisOutages(ctx, ctx.config.notify.redisUnreachableSec, sender, origin);
  if (watchdog !== undefined) tellStalls(ctx, watchdog, sender, origin, log);
}

/**
 * This process's stalls (runtime/watchdog/watchdog.ts): `stalled` firing when the watchdog sees one, resolved
 * when it is over, claimed in Redis per process (host and pid) like the other conditions (episodes.ts):
 * once, and a restart does not tell an announced episode again.
 */
function tellStalls(ctx: Context, watchdog: Watchdog, sender: Sender, origin: Origin, log: Logger): void {
  const episodes = createEpisodes(ctx.redis, ctx.keys);
  const t = translator(ctx.config.lang);
  const subject = `${origin.host}:${process.pid}`;
  const words = { host: origin.host, pid: process.pid };
  let told: Promise<void> = Promise.resolve();
  let last: StallState | null = null;
  watchdog.onChange((stall) => {
    // A stall that turns fatal is the same episode: nothing new to tell.
    if (stall !== null && last !== null) return;
    const seen = last;
    last = stall;
    const nowMs = ctx.clock.now();
    told = told.then(async () => {
      try {
        const transition = await episodes.observe('stalled', subject, stall !== null, 0, nowMs);
        if (transition === null) return;
        const base = { episode: transition.episode, since: new Date(transition.sinceMs).toISOString(), host: origin.host, pid: process.pid };
        const notification =
          transition.state === 'firing' && stall !== null
            ? makeNotification(
                origin,
                'stalled',
                'firing',
                t('notify.stalled.firing', words),
                { ...base, what: stall.what, reason: stallReason(stall), action: t('notify.stalled.action') },
                nowMs,
              )
            : makeNotification(
                origin,
                'stalled',
                'resolved',
                t('notify.resolvedAfter', { summary: t('notify.stalled.resolved', words), duration: durationText(nowMs - transition.sinceMs) }),
                { ...base, ...(seen === null ? {} : { what: seen.what }), lastedSec: Math.round((nowMs - transition.sinceMs) / 1000) },
                nowMs,
              );
        sender.send(notification);
      } catch (error) {
        log.warn({ err: error }, 'telling a stall failed');
      }
    });
  });
}

/** The background sender, every result recorded for the overview and the metric. */
function startSender(ctx: Context, channels: ReturnType<typeof channelsOf>, log: Logger): Sender {
  const sender = createSender({
    channels,
    policy: retryPolicyOf(ctx.config.notify),
    logger: log,
    onResult: (record) => {
      const n = record.notification;
      const outcome = { channel: record.channel, result: record.result, condition: n.condition, state: n.state, summary: n.summary, answer: record.answer };
      recordSend(ctx.redis, ctx.keys, outcome, ctx.clock.now()).catch((error: unknown) => log.debug({ err: error }, 'recording a notification failed'));
    },
  });
  ctx.closers.push('notification sender', () => sender.close());
  return sender;
}

/** The loop over the conditions and digests; its first pass runs before the daemon says it started. */
async function startChecks(ctx: Context, limiter: RateLimiter | null, sender: Sender, origin: Origin, log: Logger): Promise<void> {
  const { config, redis, keys } = ctx;
  const notify = config.notify;
  const loop = startNotifyLoop({
    sources: {
      redis,
      keys,
      queues: ctx.queues,
      stats: ctx.stats,
      authGate: ctx.authGate,
      attempts: ctx.attempts,
      limiter,
      ratePerMinute: config.delivery.ratePerMinute,
      spoolDir: config.spool.dir,
      notify,
      t: translator(config.lang),
    },
    episodes: createEpisodes(redis, keys),
    sender,
    origin,
    digest: {
      periodMs: notify.digestMinutes * 60_000,
      sampleIds: notify.digestSampleIds,
      overviewUrl: overviewLinkOf(notify.overviewUrl, config.http, origin.host),
    },
    checkIntervalMs: notify.checkIntervalMs,
    isWritable: () => ctx.health.isWritable(),
    now: () => ctx.clock.now(),
    logger: log,
  });
  ctx.closers.push('notification checks', () => loop.close());
  // The first pass marks where the digests begin (what was refused or dead-lettered before
  // notifications existed is not news) and sends what is due.
  await loop.tick();
}

/** Redis full and Redis failovers: told from this process's health, each message once across processes (redis-full.ts). */
function watchRedisWrites(ctx: Context, sender: Sender, origin: Origin, log: Logger): void {
  // A failover's message waits until the answers kept through it are written (a few checks).
  const failoverSettleMs = Math.max(5000, 6 * ctx.config.notify.checkIntervalMs);
  // A full Redis is resolved once writes were taken everywhere for two checks (every process in an episode deletes the calm key at each).
  const calmHoldMs = Math.max(5000, 2 * ctx.config.notify.checkIntervalMs);
  const watch = watchRedisFull(ctx.redis, ctx.keys, ctx.health, sender, origin, () => ctx.clock.now(), log, {
    failoverSettleMs,
    calmHoldMs,
    t: translator(ctx.config.lang),
  });
  const timer = setInterval(() => void watch.tick(), ctx.config.notify.checkIntervalMs);
  timer.unref();
  ctx.health.onChange(() => void watch.tick());
  ctx.closers.push('redis writes watch', () => {
    clearInterval(timer);
    watch.close();
    return Promise.resolve();
  });
}

/** Redis unreachable cannot be claimed in Redis: this process tells its own outage, and its end. */
function watchRedisOutages(ctx: Context, thresholdSec: number, sender: Sender, origin: Origin): void {
  const now = (): number => ctx.clock.now();
  const t = translator(ctx.config.lang);
  const watch = watchRedis(ctx.redis, {
    thresholdMs: thresholdSec * 1000,
    now,
    onFiring: (outage) =>
      sender.send(
        makeNotification(
          origin,
          'redis-unreachable',
          'firing',
          t('notify.redis.firing', { duration: durationText(now() - outage.sinceMs) }),
          { since: new Date(outage.sinceMs).toISOString(), reason: outage.reason, pid: process.pid, note: t('notify.redis.note') },
          now(),
        ),
      ),
    onResolved: (outage) => {
      const untilMs = outage.untilMs ?? now();
      sender.send(
        makeNotification(
          origin,
          'redis-unreachable',
          'resolved',
          t('notify.redis.resolved', { duration: durationText(untilMs - outage.sinceMs) }),
          {
            since: new Date(outage.sinceMs).toISOString(),
            until: new Date(untilMs).toISOString(),
            lastedSec: Math.round((untilMs - outage.sinceMs) / 1000),
            pid: process.pid,
          },
          now(),
        ),
      );
    },
  });
  ctx.closers.push('redis watch', () => watch.close());
}

/**
 * Where a message's reader opens the overview: the configured URL; else this host's name and port
 * when the ops server listens beyond loopback. Bound to loopback (the default) or to port 0 (a free
 * one), no address in a message reaches it from where the message is read: no link (issue 45: a
 * digest linked http://vm:8080/ui to a server listening on 127.0.0.1 only).
 */
export function overviewLinkOf(configured: string | null, http: { host: string; port: number }, hostName: string): string | null {
  if (configured !== null) return configured;
  if (http.port === 0 || isLoopbackHost(http.host)) return null;
  const host = http.host === '0.0.0.0' || http.host === '::' ? hostName : http.host.includes(':') ? `[${http.host}]` : http.host;
  return `http://${host}:${http.port}/ui`;
}
