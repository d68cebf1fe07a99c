/**
 * The delivery thread's own code (runtime/delivery-thread/delivery-thread.ts starts it): the worker role with a
 * Context of its own (its own Redis connections, queues, push gate, limiter, API client), as
 * another process of the deployment runs it. What it logs goes to the main thread, batched (one
 * message for the lines of each pass of this thread's event loop); the API client's timing
 * samples and tracing's dropped-span counters go there once a second. On `stop` it closes what
 * it opened, in the order a worker process does (workers finish in-flight jobs within the grace,
 * then the owner liveness, the API client, the queues, Redis), says `stopped`, and ends.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { createLogger, type Logger } from '../../log.js';
import type { RequestSample } from '../../ops/metrics.js';
import { createClosers } from '../closers.js';
import { routeConsoleToLog } from '../console-to-log.js';
import { openContext, type Context } from '../context.js';
import { oldestRun } from '../../push/processor.js';
import { armFailpoints, isFailpointArmed, takeFailpoint } from '../../failpoints.js';
import { toWireError, type DeliveryThreadData, type FromThread, type ToThread } from './delivery-wire.js';
import { ContactAbandoned } from '../redis-contact.js';
import { startTracing, type Tracing } from '../tracing.js';
import { watchIdleHeap } from './idle-heap.js';

/** How often the samples and the dropped-span counters go to the main thread. */
const REPORT_MS = 1000;
/** The longest a log line waits here, and the most text that waits. */
const LINES_MS = 50;
const LINES_CHARS = 64 * 1024;

const port: MessagePort = parentPortOrThrow();
const data = workerData as DeliveryThreadData;
const post = (message: FromThread): void => port.postMessage(message);

function parentPortOrThrow(): MessagePort {
  if (parentPort === null) throw new Error('delivery-thread-entry.ts runs only as a worker thread');
  return parentPort;
}

/**
 * The thread's log lines, in one message every LINES_MS (or at LINES_CHARS): a message for each
 * pass of this thread's loop, as log.ts batches stderr writes, cost 3.3 % of the thread's CPU in
 * postMessage on the large drop, and as much again on the main thread receiving them.
 */
function forwardedLines(): { write(line: string): boolean; flush(): void } {
  let pending = '';
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (pending === '') return;
    const text = pending;
    pending = '';
    post({ type: 'log', text });
  };
  return {
    write(line) {
      pending += line;
      if (pending.length >= LINES_CHARS) flush();
      else timer ??= setTimeout(flush, LINES_MS);
      return true;
    },
    flush,
  };
}

const lines = forwardedLines();
const logger: Logger = createLogger({ level: data.config.log.level, destination: lines as unknown as NodeJS.WritableStream }).child({ thread: 'delivery' });
routeConsoleToLog(logger);
// The lines of a thread that ends by a crash still go (a message posted at exit is delivered).
process.on('exit', () => lines.flush());

let samples: RequestSample[] = [];
let tracing: Tracing | null = null;
/** The thread's Context once open: its connections are watched (the beat names those that ended). */
let opened: Context | null = null;
/** The heap a flood grew, given back once the thread is idle again (idle-heap.ts). */
const idleHeap = watchIdleHeap();
const report = (): void => {
  if (idleHeap.tick()) logger.debug('delivery thread: idle after a burst, heap collected');
  // The heartbeat the main thread's watchdog waits for (runtime/watchdog/watchdog.ts): a thread whose loop is
  // stuck sends none; a connection that ended without this thread closing it never comes back.
  if (!isStopRequested) post({ type: 'beat', endedConnections: endedConnections(opened), oldestRun: oldestRun() });
  if (samples.length > 0) {
    post({ type: 'samples', samples });
    samples = [];
  }
  if (tracing !== null) post({ type: 'spans', dropped: tracing.dropped() });
};
const reporting = setInterval(report, REPORT_MS);
reporting.unref();

const closers = createClosers(logger);
const stopSignal = new AbortController();
let isStopRequested = false;

/**
 * This thread runs `nice` steps below the main thread (issue 39). With both threads busy and Redis
 * and the API beside them on two cores, the main thread's event loop waited for a core: its delay
 * p99 over the large drop was 52–66 ms at the same priority, 44–49 ms at 5 steps below (the
 * default) for a drain 2–5 % longer, 39–46 ms at 10 steps for 5–7 % (BENCHMARKS.md). On Linux a
 * thread's priority is its own: setpriority() on its thread id (from /proc/thread-self) changes
 * this thread alone; raising one's niceness needs no privilege. Elsewhere, or if it is refused, the
 * thread keeps the main thread's priority.
 */
function lowerOwnPriority(nice: number): void {
  if (nice === 0) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.min(19, getPriority(tid) + nice));
    logger.debug({ tid, nice: getPriority(tid) }, 'delivery thread: scheduling priority lowered');
  } catch (error) {
    logger.debug({ err: error }, "delivery thread: keeps the main thread's scheduling priority");
  }
}

/** The Redis connections this thread needs that ended (ioredis 'end': no reconnect will come). */
function endedConnections(ctx: Context | null): string[] {
  if (ctx === null) return [];
  const connections = new Map([
    ['redis', ctx.redis],
    ['redis (bullmq)', ctx.bullRedis],
  ]);
  return [...connections].filter(([, connection]) => connection.status === 'end').map(([name]) => name);
}

/**
 * CARRIER_SYNC_FAILPOINTS (tests only): after this thread's first completed job, it stops answering
 * (its event loop blocks for good) or its Redis connections end as if closed by their user.
 */
function failpointsAfterFirstJob(ctx: Context): (() => void) | undefined {
  armFailpoints(data.config.watchdog.failpoints);
  if (!isFailpointArmed('delivery-thread-freeze') && !isFailpointArmed('worker-connection-end')) return undefined;
  return () => {
    if (takeFailpoint('worker-connection-end')) {
      logger.warn("failpoint worker-connection-end: ending the delivery thread's Redis connections");
      for (const connection of new Set([ctx.redis, ctx.bullRedis])) connection.disconnect();
    }
    if (takeFailpoint('delivery-thread-freeze')) {
      logger.warn('failpoint delivery-thread-freeze: the delivery thread stops answering');
      lines.flush();
      setImmediate(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
    }
  };
}

async function start(): Promise<void> {
  tracing = await startTracing(process.env, logger);
  const ctx = await openContext(data.config, logger, 'worker-thread', {
    closers,
    contact: { signal: stopSignal.signal, onWaiting: (reason) => logger.warn(reason) },
    toldBoard: data.toldBoard,
  });
  if (isStopRequested) throw new ContactAbandoned();
  ctx.health.onChange((episode) => {
    if (episode !== null) post({ type: 'redis', episode: { kind: episode.kind, code: episode.code, message: episode.message } });
  });
  opened = ctx;
  const { startWorkerRole } = await import('../roles/worker-role.js');
  await startWorkerRole(ctx, data.target, data.wantsSamples ? (sample) => void samples.push(sample) : () => {}, failpointsAfterFirstJob(ctx));
  // Lowered once started, not before: its start (the worker role's modules, its Redis contact) at
  // the lower priority took over 20 s on a loaded machine (the loaded failover sweep, issue 44: 7
  // starts of 60 past the test's 30 s, load average ~21 on 2 cores), while the main thread, at its
  // own priority, had been up for seconds. The drain the lower priority is for comes after.
  lowerOwnPriority(data.config.delivery.threadNice);
}

const started = start();
started.then(
  () => {
    lines.flush(); // its start's lines before the main thread's 'delivery runs on its own thread'
    post({ type: 'ready' });
  },
  async (error: unknown) => {
    if (isStopRequested) return;
    await closers.closeAll();
    await tracing?.shutdown();
    lines.flush();
    post({ type: 'failed', error: toWireError(error) });
    clearInterval(reporting);
    port.close();
  },
);

let stopping: Promise<void> | undefined;
port.on('message', (message: ToThread) => {
  if (message.type !== 'stop') return;
  isStopRequested = true;
  stopSignal.abort();
  stopping ??= stop();
});

async function stop(): Promise<void> {
  await closers.closeAll();
  await started.catch(() => {});
  await tracing?.shutdown();
  clearInterval(reporting);
  report();
  lines.flush();
  post({ type: 'stopped' });
  port.close();
}
