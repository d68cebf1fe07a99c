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

interface SenderDeps {
  channels: readonly Channel[];
  policy: RetryPolicy;
  logger: Logger;
  onResult?: (record: SendRecord) => void;
}

/** One channel's queue: delivered one message at a time, in order. */
interface Lane {
  channel: Channel;
  queue: Notification[];
  running: Promise<void> | null;
  isFailing: boolean;
}

export function createSender(deps: SenderDeps): Sender {
  const sender = new LaneSender(deps);
  return { send: (n) => sender.send(n), idle: () => sender.idle(), close: () => sender.close() };
}

/** The sender as named steps: send queues, run drains a lane, deliver retries one message with backoff. */
class LaneSender {
  #isClosed = false;
  /** Cuts the attempts in flight short at shutdown (the HTTP channels; an SMTP session ends at its timeout). */
  readonly #stopping = new AbortController();
  readonly #stopWaits = new Set<() => void>();
  readonly #lanes: Lane[];

  constructor(private readonly deps: SenderDeps) {
    this.#lanes = deps.channels.map((channel) => ({ channel, queue: [], running: null, isFailing: false }));
  }

  send(n: Notification): void {
    if (this.#isClosed) return;
    for (const lane of this.#lanes) {
      if (lane.queue.length >= QUEUE_MAX) {
        const dropped = lane.queue.shift()!;
        this.deps.logger.error(
          { channel: lane.channel.name, condition: dropped.condition, state: dropped.state },
          'notification dropped: too many waiting on a failing channel',
        );
      }
      lane.queue.push(n);
      lane.running ??= this.#run(lane);
    }
  }

  async idle(): Promise<void> {
    while (this.#lanes.some((lane) => lane.running !== null)) await Promise.all(this.#lanes.map((lane) => lane.running));
  }

  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#stopping.abort();
    for (const stop of [...this.#stopWaits]) stop();
    await Promise.all(this.#lanes.map((lane) => lane.running));
    for (const lane of this.#lanes) {
      if (lane.queue.length > 0) this.deps.logger.warn({ channel: lane.channel.name, dropped: lane.queue.length }, 'notifications not sent before shutdown');
      lane.queue.length = 0;
    }
    await Promise.all(this.#lanes.map((lane) => lane.channel.close().catch(() => undefined)));
  }

  async #run(lane: Lane): Promise<void> {
    while (!this.#isClosed && lane.queue.length > 0) await this.#deliver(lane, lane.queue.shift()!);
    lane.running = null;
  }

  async #deliver(lane: Lane, n: Notification): Promise<void> {
    const log = this.deps.logger;
    const { channel } = lane;
    for (let attempt = 1; !this.#isClosed; attempt++) {
      try {
        const answer = await channel.send(n, this.#stopping.signal);
        this.#report({ channel: channel.name, result: 'sent', notification: n, answer });
        if (lane.isFailing) log.info({ channel: channel.name, condition: n.condition, state: n.state }, 'notification channel works again');
        else log.info({ channel: channel.name, condition: n.condition, state: n.state, answer }, 'notification sent');
        lane.isFailing = false;
        return;
      } catch (error) {
        if (!(await this.#failed(lane, n, attempt, error))) return;
      }
    }
  }

  /** One failed attempt: reported and logged once per failure streak; true when it is to be tried again (after the wait). */
  async #failed(lane: Lane, n: Notification, attempt: number, error: unknown): Promise<boolean> {
    const log = this.deps.logger;
    const { channel } = lane;
    if (this.#isClosed) {
      log.warn({ channel: channel.name, condition: n.condition, state: n.state }, 'notification cut short by the shutdown');
      return false;
    }
    const reason = (error as Error).message;
    this.#report({ channel: channel.name, result: 'failed', notification: n, answer: reason });
    const fields = { channel: channel.name, target: channel.target, condition: n.condition, state: n.state, attempt, reason };
    if (attempt >= this.deps.policy.maxAttempts) {
      log.error({ ...fields, attempts: attempt }, 'notification dropped: the channel kept failing');
      return false;
    }
    if (!lane.isFailing) log.warn(fields, 'notification channel failed; retrying with backoff');
    else log.debug(fields, 'notification channel still failing');
    lane.isFailing = true;
    await this.#wait(retryDelayMs(this.deps.policy, attempt));
    return true;
  }

  #report(record: SendRecord): void {
    try {
      this.deps.onResult?.(record);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'recording a notification result failed');
    }
  }

  /** Waits `ms`, or until the sender closes. */
  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#isClosed) return resolve();
      const stopWaits = this.#stopWaits;
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        stopWaits.delete(done);
        resolve();
      }
      stopWaits.add(done);
    });
  }
}
