/**
 * Which process holds a spool, for the overview's header: the watcher that owns a spool keeps a
 * lease in Redis (`keys.spoolLease(spoolId)`, JSON with at least host, pid and since, and the version it runs). No lease,
 * or one we cannot read, shows as "n/a"; the page never fails for it.
 */
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';

export interface SpoolHolder {
  host: string;
  pid: number | null;
  /** ISO time the lease was taken. */
  since: string | null;
  /** The version of carrier-sync the holder runs; null when its lease does not say. */
  version: string | null;
}

export async function readSpoolHolder(redis: RedisConnection, keys: Keys, spoolId: string): Promise<SpoolHolder | null> {
  const raw = await redis.get(keys.spoolLease(spoolId));
  if (raw === null) return null;
  try {
    const lease = JSON.parse(raw) as Record<string, unknown>;
    if (typeof lease['host'] !== 'string') return null;
    const since = lease['since'];
    return {
      host: lease['host'],
      pid: typeof lease['pid'] === 'number' ? lease['pid'] : null,
      since: typeof since === 'string' ? since : typeof since === 'number' ? new Date(since).toISOString() : null,
      version: typeof lease['version'] === 'string' ? lease['version'] : null,
    };
  } catch {
    return null;
  }
}
