/**
 * Redis unreachable. This cannot be claimed in Redis, so each process with the scheduler role
 * watches its own connection: once it has been down for `thresholdMs`, it sends "firing" straight
 * through the channels, and "resolved" (with how long it lasted) when the connection is ready
 * again. With several scheduler processes each one reports its own view (the message names its
 * host): a person may get one pair per process. A shorter outage sends nothing.
 */
import type { RedisConnection } from '../store/redis.js';

export interface RedisOutage {
  sinceMs: number;
  /** Set when the outage ended. */
  untilMs?: number;
  reason: string;
}

export interface RedisWatch {
  /** The outage in progress, if any. */
  current(): RedisOutage | null;
  close(): void;
}

export function watchRedis(
  redis: RedisConnection,
  options: { thresholdMs: number; now: () => number; onFiring(outage: RedisOutage): void; onResolved(outage: RedisOutage): void },
): RedisWatch {
  let outage: RedisOutage | null = null;
  let hasFired = false;
  let timer: NodeJS.Timeout | undefined;
  let lastError = 'connection lost';

  const onError = (error: Error): void => {
    lastError = error.message;
  };
  const onDown = (): void => {
    if (outage !== null) return;
    outage = { sinceMs: options.now(), reason: lastError };
    timer = setTimeout(() => {
      if (outage === null) return;
      hasFired = true;
      options.onFiring({ ...outage, reason: lastError });
    }, options.thresholdMs);
    timer.unref();
  };
  const onReady = (): void => {
    clearTimeout(timer);
    if (outage !== null && hasFired) options.onResolved({ ...outage, untilMs: options.now() });
    outage = null;
    hasFired = false;
    lastError = 'connection lost';
  };
  redis.on('error', onError);
  redis.on('close', onDown);
  redis.on('reconnecting', onDown);
  redis.on('ready', onReady);
  return {
    current: () => outage,
    close() {
      clearTimeout(timer);
      redis.off('error', onError);
      redis.off('close', onDown);
      redis.off('reconnecting', onDown);
      redis.off('ready', onReady);
    },
  };
}
