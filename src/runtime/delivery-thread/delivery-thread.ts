/**
 * The delivery on a thread of its own (issue 39). In a process that runs both the watcher and the
 * worker role, the worker role (BullMQ workers, push gate, limiter, API requests) runs on a
 * worker_threads Worker (runtime/delivery-thread/delivery-thread-entry.ts) with a Context of its own: its own
 * Redis connections, as another process of the same deployment has. The spool side (claim, check,
 * enqueue, file moves, ops server) keeps the main thread, so the two sides use two cores.
 *
 * What crosses (runtime/delivery-thread/delivery-wire.ts): to the thread, the config (plain data; `redis.url` set
 * to the URL this process connected with, so a managed redis-server stays the main thread's) and
 * the API target (the embedded sandbox stays here: its URL and keys go). Back: log lines, batched
 * per pass of the thread's loop and written into this process's one logger queue (log.ts
 * writeLogLines: one ordered stderr); the API client's timing samples and tracing's dropped-span
 * counters, once a second, for the http role's metrics.
 *
 * Shutdown: the thread's close sits on the shutdown stack where the workers' close sits without
 * it; on `stop` the thread finishes in-flight jobs within the grace (the same closeWorkers bound),
 * closes what it opened and ends. A thread that fails to start fails the start (exit 1); one that
 * crashes later is reported to `onCrash` (the daemon then stops, exit 1): its jobs are in Redis,
 * taken up again after their lock expires, as after a worker process's crash.
 *
 * The watchdog (runtime/watchdog/watchdog.ts) reads the thread's heartbeat (a `beat` message every second,
 * naming the Redis connections that ended without being closed) and, on a stall, replaces the
 * thread: the old one is terminated (a thread that stopped answering cannot stop in order) and a
 * new one started; the old one's end is then no crash.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../config/schema.js';
import { writeLogLines } from '../../log.js';
import type { Metrics } from '../../ops/metrics.js';
import type { ApiTarget } from '../api-target.js';
import type { Context } from '../context.js';
import type { DeliveryThreadData, FromThread, ToThread, WireError } from './delivery-wire.js';
import { ContactAbandoned } from '../redis-contact.js';
import type { SpansDropped } from '../tracing.js';

export interface DeliveryThread {
  /** The thread's dropped spans (totals), for the http role's metrics. */
  spansDropped(): SpansDropped;
  /** What the watchdog reads (runtime/watchdog/watchdog.ts): the thread's last heartbeat, and the Redis connections it says ended. */
  beat(): { lastAt: number; endedConnections: string[]; oldestRun: { jobId: string; since: number } | null } | null;
  /**
   * Ends the thread at once (terminate: a thread that stopped answering cannot stop in order) and
   * starts a new one, with new connections and workers; resolves once its workers run. Its jobs
   * are in Redis and are taken up again when their locks expire, as after a crash. The failpoints
   * are not armed again in the new thread.
   */
  restart(): Promise<void>;
}

export interface DeliveryThreadOptions {
  /** The main thread's Redis-outage board (runtime/context.ts OpenOptions.toldBoard). */
  toldBoard: Int32Array;
  /** The http role's request metrics; null without it (the thread then sends no samples). */
  observeRequest: Metrics['observeRequest'] | null;
  /** The thread ended on its own, after its start: an uncaught error, or an exit nobody asked for. */
  onCrash(error: Error): void;
}

/** Whether this process runs the worker role on a thread: both roles here, and the setting (auto: at least 2 cores). */
export function isDeliveryThreaded(config: Readonly<Config>, roles: readonly string[]): boolean {
  if (!roles.includes('watcher') || !roles.includes('worker')) return false;
  const setting = config.delivery.thread;
  return setting === 'on' || (setting === 'auto' && availableParallelism() >= 2);
}

/** One thread's life: started, running, asked to stop (or replaced), ended. */
interface Run {
  worker: Worker;
  phase: 'starting' | 'running' | 'stopping' | 'ended';
  isStopAsked: boolean;
  /** Replaced by the watchdog: its end is no crash. */
  isReplaced: boolean;
  started: Promise<Error | null>;
  stopped: Promise<void>;
  lastBeatAt: number;
  endedConnections: string[];
  /** The oldest job run under way in the thread, as its last beat said. */
  oldestRun: { jobId: string; since: number } | null;
}

/** Starts the thread; resolves once its workers run. Its close is on `ctx.closers` from the first moment. */
export async function startDeliveryThread(ctx: Context, target: ApiTarget, options: DeliveryThreadOptions): Promise<DeliveryThread> {
  const { config, logger } = ctx;
  let dropped: SpansDropped = { queueFull: 0, exportFailed: 0 };

  const spawn = (failpoints: Config['watchdog']['failpoints']): Run => spawnRun(ctx, target, options, failpoints, (next) => (dropped = next));

  /** Waits for `run`'s start; ends it and throws when it failed. */
  const awaitStart = async (run: Run): Promise<void> => {
    const startError = await run.started;
    if (startError !== null) {
      if (run.isStopAsked) throw new ContactAbandoned();
      await run.worker.terminate();
      throw startError;
    }
    run.phase = 'running';
    run.lastBeatAt = Date.now();
    logger.info({ threadId: run.worker.threadId }, 'delivery runs on its own thread');
  };

  let current = spawn(config.watchdog.failpoints);
  ctx.closers.push('delivery thread', async () => {
    const run = current;
    if (run.phase === 'ended') return;
    run.phase = 'stopping';
    run.isStopAsked = true;
    run.worker.postMessage({ type: 'stop' } satisfies ToThread);
    await run.stopped;
    await run.worker.terminate();
  });
  await awaitStart(current);
  return {
    spansDropped: () => ({ ...dropped }),
    beat: () => (current.phase === 'running' ? { lastAt: current.lastBeatAt, endedConnections: current.endedConnections, oldestRun: current.oldestRun } : null),
    async restart() {
      const old = current;
      if (old.phase !== 'running') return;
      old.isReplaced = true;
      await old.worker.terminate();
      current = spawn([]);
      await awaitStart(current);
    },
  };
}

/** One thread, started with `failpoints` armed (the first one only), its messages wired to the main thread. */
function spawnRun(
  ctx: Context,
  target: ApiTarget,
  options: DeliveryThreadOptions,
  failpoints: Config['watchdog']['failpoints'],
  onSpans: (dropped: SpansDropped) => void,
): Run {
  const { config, logger } = ctx;
  const data: DeliveryThreadData = {
    config: { ...config, redis: { ...config.redis, url: ctx.redisUrl }, watchdog: { ...config.watchdog, failpoints } },
    target,
    wantsSamples: options.observeRequest !== null,
    toldBoard: options.toldBoard,
  };
  const worker = new Worker(new URL(entryFileUrl()), { workerData: data, stdout: false, stderr: false });
  let settleStart: (error: Error | null) => void = () => {};
  let markStopped: () => void = () => {};
  const run: Run = {
    worker,
    phase: 'starting',
    isStopAsked: false,
    isReplaced: false,
    started: new Promise<Error | null>((resolve) => (settleStart = resolve)),
    stopped: new Promise<void>((resolve) => (markStopped = resolve)),
    lastBeatAt: Date.now(),
    endedConnections: [],
    oldestRun: null,
  };
  worker.on('message', (message: FromThread) => {
    if (message.type === 'log') writeLogLines(logger, message.text);
    else if (message.type === 'beat') {
      run.lastBeatAt = Date.now();
      run.endedConnections = message.endedConnections;
      run.oldestRun = message.oldestRun;
    } else if (message.type === 'samples') for (const sample of message.samples) options.observeRequest?.(sample);
    else if (message.type === 'spans') onSpans(message.dropped);
    else if (message.type === 'redis') ctx.health.adopt(message.episode, 'delivery-thread');
    else if (message.type === 'ready') settleStart(null);
    else if (message.type === 'failed') settleStart(errorOf(message.error));
    else {
      markStopped();
      settleStart(new ContactAbandoned());
    }
  });
  let crash: Error | null = null;
  worker.on('error', (error) => (crash ??= error));
  worker.on('exit', (code) => {
    const was = run.phase;
    run.phase = 'ended';
    markStopped();
    const reason = crash ?? new Error(`the delivery thread exited (code ${code})`);
    settleStart(reason);
    if (run.isReplaced) return;
    if (was === 'running') options.onCrash(reason);
    else if (was === 'stopping' && crash !== null) logger.error({ err: crash }, 'the delivery thread failed while stopping');
  });
  return run;
}

function errorOf(wire: WireError): Error {
  const error = new Error(`the delivery thread failed to start: ${wire.message}`);
  if (wire.stack !== null) error.stack = wire.stack;
  return error;
}

/** The thread's file: dist/'s, also when this module runs from src/ (the tests). */
function entryFileUrl(): string {
  const own = new URL('./delivery-thread-entry.js', import.meta.url);
  return import.meta.url.endsWith('.ts') ? own.href.replace('/src/runtime/', '/dist/src/runtime/') : own.href;
}
