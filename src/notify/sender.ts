/**
 * Delivery off the push path. `send()` only queues the message and returns; each channel has its
 * own queue, worked one message at a time (so a channel's "resolved" never overtakes its "firing")
 * by a loop that retries a failed attempt after a wait doubling from `baseMs` up to `maxMs`, at most
 * `maxAttempts` times, then drops the message with an error line. A failing channel is logged once
 * per failure streak (warn), then again when it recovers (info); it never holds other channels back.
 *
 * Each message ends as one `sent` (or none, when dropped); every failed attempt counts one `failed`.
 */
import type { Logger } from '../log.js';
import type { Channel, ChannelName } from './channel.js';
import type { Notification } from './message.js';

export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}

export type SendResult = 'sent' | 'failed';

export interface SendRecord {
  channel: ChannelName;
  result: SendResult;
  notification: Notification;
  /** The other side's answer, or why the attempt failed. */
  answer: string;
}

export interface Sender {
  /** Queues `n` on every channel; never waits for delivery. */
  send(n: Notification): void;
  /** Resolves once every queue is empty (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops retrying; a message still queued is dropped (and logged). */
  close(): Promise<void>;
}

/** Messages waiting on one channel before the oldest is dropped (a channel down for days). */
const QUEUE_MAX = 100;

export function retryDelayMs(policy: RetryPolicy, failedAttempts: number): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failedAttempts - 1));
}

export function createSender(deps: { channels: readonly Channel[]; policy: RetryPolicy; logger: Logger; onResult?: (record: SendRecord) => void }): Sender {
  const log = deps.logger;
  let isClosed = false;
  /** Cuts the attempts in flight short at shutdown (the HTTP channels; an SMTP session ends at its timeout). */
  const stopping = new AbortController();
  const stopWaits = new Set<() => void>();
  const lanes = deps.channels.map((channel) => ({ channel, queue: [] as Notification[], running: null as Promise<void> | null, isFailing: false }));

  const wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (isClosed) return resolve();
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        stopWaits.delete(done);
        resolve();
      }
      stopWaits.add(done);
    });

  const report = (record: SendRecord): void => {
    try {
      deps.onResult?.(record);
    } catch (error) {
      log.warn({ err: error }, 'recording a notification result failed');
    }
  };

  const deliver = async (lane: (typeof lanes)[number], n: Notification): Promise<void> => {
    const { channel } = lane;
    for (let attempt = 1; !isClosed; attempt++) {
      try {
        const answer = await channel.send(n, stopping.signal);
        report({ channel: channel.name, result: 'sent', notification: n, answer });
        if (lane.isFailing) log.info({ channel: channel.name, condition: n.condition, state: n.state }, 'notification channel works again');
        else log.info({ channel: channel.name, condition: n.condition, state: n.state, answer }, 'notification sent');
        lane.isFailing = false;
        return;
      } catch (error) {
        if (isClosed) {
          log.warn({ channel: channel.name, condition: n.condition, state: n.state }, 'notification cut short by the shutdown');
          return;
        }
        const reason = (error as Error).message;
        report({ channel: channel.name, result: 'failed', notification: n, answer: reason });
        const fields = { channel: channel.name, target: channel.target, condition: n.condition, state: n.state, attempt, reason };
        if (attempt >= deps.policy.maxAttempts) {
          log.error({ ...fields, attempts: attempt }, 'notification dropped: the channel kept failing');
          return;
        }
        if (!lane.isFailing) log.warn(fields, 'notification channel failed; retrying with backoff');
        else log.debug(fields, 'notification channel still failing');
        lane.isFailing = true;
        await wait(retryDelayMs(deps.policy, attempt));
      }
    }
  };

  const run = async (lane: (typeof lanes)[number]): Promise<void> => {
    while (!isClosed && lane.queue.length > 0) await deliver(lane, lane.queue.shift()!);
    lane.running = null;
  };

  return {
    send(n) {
      if (isClosed) return;
      for (const lane of lanes) {
        if (lane.queue.length >= QUEUE_MAX) {
          const dropped = lane.queue.shift()!;
          log.error(
            { channel: lane.channel.name, condition: dropped.condition, state: dropped.state },
            'notification dropped: too many waiting on a failing channel',
          );
        }
        lane.queue.push(n);
        lane.running ??= run(lane);
      }
    },
    async idle() {
      while (lanes.some((lane) => lane.running !== null)) await Promise.all(lanes.map((lane) => lane.running));
    },
    async close() {
      if (isClosed) return;
      isClosed = true;
      stopping.abort();
      for (const stop of [...stopWaits]) stop();
      await Promise.all(lanes.map((lane) => lane.running));
      for (const lane of lanes) {
        if (lane.queue.length > 0) log.warn({ channel: lane.channel.name, dropped: lane.queue.length }, 'notifications not sent before shutdown');
        lane.queue.length = 0;
      }
      await Promise.all(lanes.map((lane) => lane.channel.close().catch(() => undefined)));
    },
  };
}
