/**
 * What the sender did, kept in Redis for every process to show: counts per channel and result
 * (the `carrier_sync_notifications_total` metric) and the last message sent, and the last failure,
 * per channel (the overview). Written in the background: a Redis away delays the record, never a send.
 */
import type { Keys } from './keys.js';
import type { RedisConnection } from './redis.js';

/** One attempt of one message on one channel (`notify/sender.ts`). */
export interface SendOutcome {
  channel: string;
  result: 'sent' | 'failed';
  condition: string;
  state: string;
  summary: string;
  /** The other side's answer, or why the attempt failed. */
  answer: string;
}

export interface ChannelReport {
  channel: string;
  target: string;
  lastSent: { at: string; condition: string; state: string; summary: string; answer: string } | null;
  lastFailure: { at: string; condition: string; state: string; reason: string } | null;
}

export function recordSend(redis: RedisConnection, keys: Pick<Keys, 'notifyCounts' | 'notifyLast'>, record: SendOutcome, atMs: number): Promise<void> {
  const n = record;
  const at = new Date(atMs).toISOString();
  const last =
    record.result === 'sent'
      ? [record.channel, JSON.stringify({ at, condition: n.condition, state: n.state, summary: n.summary, answer: record.answer })]
      : [`${record.channel}:failure`, JSON.stringify({ at, condition: n.condition, state: n.state, reason: record.answer })];
  return redis
    .multi()
    .hincrby(keys.notifyCounts, `${record.channel}:${record.result}`, 1)
    .hset(keys.notifyLast, last[0]!, last[1]!)
    .exec()
    .then(() => undefined);
}

/** Publishes the channels a scheduler runs with (replacing the previous list). */
export async function publishChannels(
  redis: RedisConnection,
  keys: Pick<Keys, 'notifyChannels'>,
  channels: ReadonlyArray<{ name: string; target: string }>,
): Promise<void> {
  const chain = redis.multi().del(keys.notifyChannels);
  for (const channel of channels) chain.hset(keys.notifyChannels, channel.name, channel.target);
  await chain.exec();
}

/** Counts by channel and result, for the metric. */
export async function readSendCounts(
  redis: RedisConnection,
  keys: Pick<Keys, 'notifyCounts'>,
): Promise<Array<{ channel: string; result: string; count: number }>> {
  const raw = await redis.hgetall(keys.notifyCounts);
  return Object.entries(raw).map(([field, value]) => {
    const at = field.lastIndexOf(':');
    return { channel: field.slice(0, at), result: field.slice(at + 1), count: Number(value) };
  });
}

/** The configured channels with their last message and last failure, for the overview. */
export async function readChannelReports(redis: RedisConnection, keys: Pick<Keys, 'notifyChannels' | 'notifyLast'>): Promise<ChannelReport[]> {
  const [channels, last] = await Promise.all([redis.hgetall(keys.notifyChannels), redis.hgetall(keys.notifyLast)]);
  const parse = <T>(raw: string | undefined): T | null => {
    try {
      return raw === undefined ? null : (JSON.parse(raw) as T);
    } catch {
      return null;
    }
  };
  return Object.entries(channels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([channel, target]) => ({
      channel,
      target,
      lastSent: parse<ChannelReport['lastSent']>(last[channel]),
      lastFailure: parse<ChannelReport['lastFailure']>(last[`${channel}:failure`]),
    }));
}
