/**
 * The file checks off the event loop: label PDFs and CT-e XMLs (the documents lane) and events
 * files (the events lane) are checked on worker threads (piscina), so the thread that claims,
 * queues and sends never spends a hard file's seconds, and a second core does the checking.
 *
 * Budgets. Memory: each lane's threads run with V8's resourceLimits (maxOldGenerationSizeMb); a
 * check over it ends its thread (ERR_WORKER_OUT_OF_MEMORY). CPU: a watch on the event loop (every
 * WATCH_MS while checks run) looks at each file that has had its budget's wall time, reads its
 * thread's own CPU clock from when it began the file (cpu-budget.ts, check-board.ts), and ends
 * that thread once the file has used cpuMs of it.
 * A file over either budget is refused (LABEL_TOO_COMPLEX, CTE_TOO_COMPLEX, EVENT_FILE_TOO_COMPLEX,
 * the limit and its setting in the message) and its thread is replaced.
 *
 * Small files. A file under onThreadFromBytes (16 KiB by default) is checked on the event loop:
 * its size bounds what its check can cost (a 14 KB label of 500 empty objects, the worst found,
 * takes ~1.6 ms of CPU; no parser here is worse than linear, entities are never expanded), and handing it to
 * a thread costs the event loop more than checking it (BENCHMARKS.md, issue 39: with every file on
 * a thread the large drop's daemon CPU was 1.33× main's). The budgets guard the files that could
 * cost seconds: large ones.
 *
 * Slots. At most `threads` checks run at once over both lanes (the cores − 1 the pool is sized to);
 * the others wait here, in order, so a file's deadline never counts a wait in piscina's queue.
 *
 * A thread that dies otherwise (a crash, an error thrown by a validator) is given the file once
 * more on a fresh thread; failing again, the file is refused with the failure. A thread that never
 * began the file (it could not start) refuses nothing: the caller's error leaves the file where it
 * is, and its claim is tried again later. Nothing starts until the first check (lazy: a process
 * that checks nothing has no thread and never loads piscina); idle threads end after idleMs.
 */
import { availableParallelism } from 'node:os';
import type { Piscina } from 'piscina';
import type { ChecksConfig } from '../../config/schema.js';
import { SyncError, type ErrorCode } from '../../errors.js';
import { reasonOf, refusal, type Reason } from '../../i18n/reason.js';
import type { Logger } from '../../log.js';
import type { EventsFileOptions, EventsFileResult, EventsFormat } from '../events-file.js';
import { accept, reject, type Verdict } from '../verdict.js';
import { begunBy, boardOf, createSharedBoard, type CheckBoard } from './check-board.js';
import type { checkNow } from './check-now.js';
import { isOverBudget } from './cpu-budget.js';
import { loopTurn } from '../../loop-turn.js';
import { takeFailpoint } from '../../failpoints.js';
import { createThreadSlots } from './thread-slots.js';
import { fromWire, type CheckedCte, type CheckedLabel, type CheckKind, type CheckOutcome, type CheckTask } from './wire.js';

export interface CheckPool {
  label(bytes: Uint8Array, options: { maxBytes: number }): Promise<Verdict<CheckedLabel>>;
  cte(bytes: Uint8Array, options: { maxBytes: number }): Promise<Verdict<CheckedCte>>;
  events(bytes: Uint8Array, format: EventsFormat, options: EventsFileOptions): Promise<Verdict<EventsFileResult>>;
  /** Lets the checks running finish, then ends every thread; a check asked for after it throws. */
  close(): Promise<void>;
  /**
   * Ends every thread now, checks under way included (the watchdog's recovery from a thread that
   * stopped answering): a check no thread began is the caller's error (its file is claimed again
   * later); one begun is given to a fresh thread once, as after a crash. The next check opens new threads.
   */
  restartThreads(): Promise<void>;
}

type Lane = keyof Pick<ChecksConfig, 'documents' | 'events'>;
type Attempt = { outcome: CheckOutcome } | { failure: 'cpu' | 'memory' } | { crash: unknown; hasStarted: boolean };

const LANE_OF: Readonly<Record<CheckKind, Lane>> = { label: 'documents', cte: 'documents', events: 'events' };
const TOO_COMPLEX: Readonly<Record<CheckKind, ErrorCode>> = { label: 'LABEL_TOO_COMPLEX', cte: 'CTE_TOO_COMPLEX', events: 'EVENT_FILE_TOO_COMPLEX' };
const SETTING: Readonly<Record<Lane, { cpu: string; memory: string }>> = {
  documents: { cpu: 'CARRIER_SYNC_CHECK_CPU_MS', memory: 'CARRIER_SYNC_CHECK_MEMORY_MB' },
  events: { cpu: 'CARRIER_SYNC_EVENTS_CHECK_CPU_MS', memory: 'CARRIER_SYNC_EVENTS_CHECK_MEMORY_MB' },
};
/** How often the CPU watch looks, while checks run: a file over budget runs at most this much longer. */
const WATCH_MS = 100;

/** A lane: its threads and the board they write on. */
interface LaneThreads {
  pool: Piscina;
  board: CheckBoard;
}

/** A check handed to a thread. */
interface Flight {
  id: number;
  lane: Lane;
  handedAt: number;
  threads: LaneThreads;
  isOverCpu: boolean;
}

/** Threads the checks use: the setting, else the machine's cores − 1, at least 1. */
export function checkThreadsOf(config: Pick<ChecksConfig, 'threads'>): number {
  return config.threads ?? Math.max(1, availableParallelism() - 1);
}

/** A check that failed because `restartThreads` ended its thread before it began: its file is simply claimed again. */
export function isChecksRestart(error: unknown): boolean {
  return (error as { isChecksRestart?: unknown } | null)?.isChecksRestart === true;
}

/** Ends the thread of every file that has spent its CPU budget (the file is then refused). */
function endThreadsOverBudget(flights: ReadonlyMap<number, Flight>, config: ChecksConfig): void {
  const now = Date.now();
  for (const flight of flights.values()) {
    const budgetMs = config[flight.lane].cpuMs;
    // A file cannot have used more CPU than the wall time since it was handed over.
    if (flight.isOverCpu || now - flight.handedAt < budgetMs) continue;
    const begun = begunBy(flight.threads.board, flight.id);
    if (begun === null || !isOverBudget(begun, budgetMs, now)) continue;
    flight.isOverCpu = true;
    void flight.threads.pool.threads.find((worker) => worker.threadId === begun.threadId)?.terminate();
  }
}

/**
 * A small file's check on the event loop, once the loop's slice has room (checks resolved together
 * would otherwise run back to back: src/loop-turn.ts); null when the validator threw.
 */
async function checkInline(checks: Promise<{ checkNow: typeof checkNow }>, task: CheckTask): Promise<CheckOutcome | null> {
  const { checkNow: checkHere } = await checks;
  await loopTurn();
  return checkHere(task).catch(() => null);
}

export function createCheckPool(config: ChecksConfig, logger: Logger): CheckPool {
  const threads = checkThreadsOf(config);
  const slots = createThreadSlots(threads);
  const lanes = openLanes(config, threads, logger);
  const flights = new Map<number, Flight>();
  let watch: NodeJS.Timeout | undefined;
  let nextId = 1;
  let isClosed = false;
  /** How many times the threads were ended by `restartThreads`. */
  let restarts = 0;
  /** The validators, loaded with the first file checked here (not at start: issue 29's idle memory). */
  let inlineChecks: Promise<{ checkNow: typeof checkNow }> | undefined;

  /** One run of the task on a thread, within its lane's budget. */
  const attempt = async (task: CheckTask): Promise<Attempt> => {
    const lane = LANE_OF[task.kind];
    const threadsOfLane = await lanes.of(lane);
    const flight: Flight = { id: nextId++, lane, handedAt: Date.now(), threads: threadsOfLane, isOverCpu: false };
    flights.set(flight.id, flight);
    watch ??= setInterval(() => endThreadsOverBudget(flights, config), WATCH_MS).unref();
    // The failpoint (tests only): this check's thread stops answering before it begins the file.
    const freeze = takeFailpoint('check-thread-freeze');
    if (freeze) logger.warn({ kind: task.kind }, "failpoint check-thread-freeze: this check's thread stops answering before it begins the file");
    try {
      return { outcome: (await threadsOfLane.pool.run({ ...task, id: flight.id, ...(freeze ? { freeze } : {}) })) as CheckOutcome };
    } catch (error) {
      if (flight.isOverCpu) return { failure: 'cpu' };
      if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') return { failure: 'memory' };
      return { crash: error, hasStarted: begunBy(threadsOfLane.board, flight.id) !== null };
    } finally {
      flights.delete(flight.id);
      if (flights.size === 0) {
        clearInterval(watch);
        watch = undefined;
      }
    }
  };

  /** The task's outcome; over budget or failing twice, the file's refusal. Throws when no thread could begin it. */
  const check = async (task: CheckTask): Promise<CheckOutcome | SyncError> => {
    if (isClosed) throw new Error('the file checks are closed');
    if (task.bytes.byteLength < config.onThreadFromBytes) {
      // A validator that throws (it should not) is given the file again on a thread, where a failure is a refusal.
      inlineChecks ??= import('./check-now.js');
      const inline = await checkInline(inlineChecks, task);
      if (inline !== null) return inline;
    }
    await slots.take();
    const restartsBefore = restarts;
    try {
      let last = await attempt(task);
      if ('crash' in last && last.hasStarted && !isClosed) {
        logger.warn({ kind: task.kind, err: last.crash }, 'a check thread failed; checking the file again on a fresh thread');
        last = await attempt(task);
      }
      if ('outcome' in last) return last.outcome;
      if ('failure' in last) return overBudget(task.kind, last.failure, config);
      if (!last.hasStarted && restarts !== restartsBefore)
        throw Object.assign(new Error('the file checks were restarted before a thread began the file', { cause: last.crash }), { isChecksRestart: true });
      if (!last.hasStarted || isClosed) throw new Error('no check thread could begin the file', { cause: last.crash });
      return refusal(TOO_COMPLEX[task.kind], reasonOf('reason.check.crashed', { detail: detailOf(last.crash) }));
    } finally {
      slots.give();
    }
  };

  return {
    async label(bytes, options) {
      return verdictOf<CheckedLabel>(await check({ kind: 'label', bytes, maxBytes: options.maxBytes }));
    },
    async cte(bytes, options) {
      return verdictOf<CheckedCte>(await check({ kind: 'cte', bytes, maxBytes: options.maxBytes }));
    },
    async events(bytes, format, options) {
      return verdictOf<EventsFileResult>(
        await check({ kind: 'events', bytes, format, maxLineBytes: options.maxLineBytes, timeZone: options.timeZone ?? null }),
      );
    },
    async close() {
      isClosed = true;
      await lanes.end((pool) => pool.close());
    },
    async restartThreads() {
      restarts += 1;
      await lanes.end((pool) => pool.destroy());
    },
  };
}

/** The lanes, each opened at its first check; `end` ends those open (the next check opens a lane afresh). */
function openLanes(
  config: ChecksConfig,
  threads: number,
  logger: Logger,
): { of(lane: Lane): Promise<LaneThreads>; end(how: (pool: Piscina) => Promise<void>): Promise<void> } {
  const lanes = new Map<Lane, Promise<LaneThreads>>();
  return {
    of(lane) {
      let threadsOfLane = lanes.get(lane);
      if (threadsOfLane === undefined) {
        threadsOfLane = openLane(config, lane, threads, logger);
        lanes.set(lane, threadsOfLane);
      }
      return threadsOfLane;
    },
    async end(how) {
      const open = [...lanes.values()];
      lanes.clear();
      await Promise.all(open.map(async (lane) => how((await lane).pool)));
    },
  };
}

/** A lane's piscina and board, made at its first check; its threads start as files come. */
async function openLane(config: ChecksConfig, lane: Lane, threads: number, logger: Logger): Promise<LaneThreads> {
  const { Piscina } = await import('piscina');
  const shared = createSharedBoard();
  const pool = new Piscina({
    filename: taskFileUrl().href,
    name: 'default',
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: config.idleMs,
    concurrentTasksPerWorker: 1,
    resourceLimits: { maxOldGenerationSizeMb: config[lane].memoryMb },
    workerData: { board: shared },
  });
  // A thread that fails with no check on it (piscina replaces it): told, never thrown at the event loop.
  pool.on('error', (error: unknown) => logger.warn({ err: error, lane }, 'a check thread failed between checks'));
  return { pool, board: boardOf(shared) };
}

/**
 * The threads' module. Built, it sits beside this file. Under the tests (vitest runs the TypeScript
 * sources, which a worker thread of Node 20 cannot load) it is the build's copy, which the tests'
 * global setup brings up to date before they run.
 */
function taskFileUrl(): URL {
  const own = new URL('./check-task.js', import.meta.url);
  return import.meta.url.endsWith('.ts') ? new URL(own.href.replace('/src/validate/pool/', '/dist/src/validate/pool/')) : own;
}

function verdictOf<T>(outcome: CheckOutcome | SyncError): Verdict<T> {
  if (outcome instanceof SyncError) return reject(outcome);
  if (!outcome.ok) return reject(fromWire(outcome.error));
  return accept(outcome.value as T, outcome.warnings);
}

function overBudget(kind: CheckKind, failure: 'cpu' | 'memory', config: ChecksConfig): SyncError {
  const lane = LANE_OF[kind];
  const reason: Reason =
    failure === 'cpu'
      ? reasonOf('reason.check.overCpu', { ms: String(config[lane].cpuMs), setting: SETTING[lane].cpu })
      : reasonOf('reason.check.overMemory', { mb: String(config[lane].memoryMb), setting: SETTING[lane].memory });
  const params = failure === 'cpu' ? { budget: 'cpu', cpuMs: config[lane].cpuMs } : { budget: 'memory', memoryMb: config[lane].memoryMb };
  return refusal(TOO_COMPLEX[kind], reason, { params });
}

function detailOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split('\n')[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}
