/**
 * The file checks off the event loop: label PDFs and CT-e XMLs (the documents lane) and events
 * files (the events lane) are checked on worker threads (piscina), so the thread that claims,
 * queues and sends never spends a hard file's seconds, and a second core does the checking.
 *
 * Budgets. Memory: each lane's threads run with V8's resourceLimits (maxOldGenerationSizeMb); a
 * check over it ends its thread (ERR_WORKER_OUT_OF_MEMORY). CPU: the event loop watches the check
 * thread's own CPU clock from the moment it says it began the file (cpu-budget.ts says why and how)
 * and stops the thread once the file has used cpuMs of it.
 * A file over either budget is refused (LABEL_TOO_COMPLEX, CTE_TOO_COMPLEX, EVENT_FILE_TOO_COMPLEX,
 * the limit and its setting in the message) and its thread is replaced.
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
import type { EventsFileResult, EventsFormat } from '../events-file.js';
import { accept, reject, type Verdict } from '../verdict.js';
import type { CheckStarted } from './check-task.js';
import { watchCpuBudget } from './cpu-budget.js';
import { createThreadSlots } from './thread-slots.js';
import { fromWire, type CheckedCte, type CheckedLabel, type CheckKind, type CheckOutcome, type CheckTask } from './wire.js';

export interface CheckPool {
  label(bytes: Uint8Array, options: { maxBytes: number }): Promise<Verdict<CheckedLabel>>;
  cte(bytes: Uint8Array, options: { maxBytes: number }): Promise<Verdict<CheckedCte>>;
  events(bytes: Uint8Array, format: EventsFormat, options: { maxLineBytes: number }): Promise<Verdict<EventsFileResult>>;
  /** Lets the checks running finish, then ends every thread; a check asked for after it throws. */
  close(): Promise<void>;
}

type Lane = keyof Pick<ChecksConfig, 'documents' | 'events'>;
type Attempt = { outcome: CheckOutcome } | { failure: 'cpu' | 'memory' } | { crash: unknown; hasStarted: boolean };

const LANE_OF: Readonly<Record<CheckKind, Lane>> = { label: 'documents', cte: 'documents', events: 'events' };
const TOO_COMPLEX: Readonly<Record<CheckKind, ErrorCode>> = { label: 'LABEL_TOO_COMPLEX', cte: 'CTE_TOO_COMPLEX', events: 'EVENT_FILE_TOO_COMPLEX' };
const SETTING: Readonly<Record<Lane, { cpu: string; memory: string }>> = {
  documents: { cpu: 'CARRIER_SYNC_CHECK_CPU_MS', memory: 'CARRIER_SYNC_CHECK_MEMORY_MB' },
  events: { cpu: 'CARRIER_SYNC_EVENTS_CHECK_CPU_MS', memory: 'CARRIER_SYNC_EVENTS_CHECK_MEMORY_MB' },
};
/** A thread that has not begun its file after this long is taken as one that could not start. */
const START_BACKSTOP_MS = 60_000;

/** Threads the checks use: the setting, else the machine's cores − 1, at least 1. */
export function checkThreadsOf(config: Pick<ChecksConfig, 'threads'>): number {
  return config.threads ?? Math.max(1, availableParallelism() - 1);
}

export function createCheckPool(config: ChecksConfig, logger: Logger): CheckPool {
  const threads = checkThreadsOf(config);
  const slots = createThreadSlots(threads);
  const lanes = new Map<Lane, Promise<Piscina>>();
  const started = new Map<number, (tid: number | null) => void>();
  let nextId = 1;
  let isClosed = false;

  const laneOf = (lane: Lane): Promise<Piscina> => {
    let pool = lanes.get(lane);
    if (pool === undefined) {
      pool = openLane(config, lane, threads, logger, (id, tid) => started.get(id)?.(tid));
      lanes.set(lane, pool);
    }
    return pool;
  };

  /** One run of the task on a thread, within its lane's budget. */
  const attempt = async (task: CheckTask): Promise<Attempt> => {
    const lane = LANE_OF[task.kind];
    const pool = await laneOf(lane);
    const id = nextId++;
    const deadline = new AbortController();
    let hasStarted = false;
    let stopWatching = (): void => {};
    const backstop = setTimeout(() => deadline.abort(), START_BACKSTOP_MS + config[lane].cpuMs);
    started.set(id, (tid) => {
      hasStarted = true;
      stopWatching = watchCpuBudget(tid, config[lane].cpuMs, () => deadline.abort());
    });
    try {
      return { outcome: (await pool.run({ ...task, id }, { signal: deadline.signal })) as CheckOutcome };
    } catch (error) {
      if (deadline.signal.aborted && hasStarted) return { failure: 'cpu' };
      if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') return { failure: 'memory' };
      return { crash: error, hasStarted };
    } finally {
      clearTimeout(backstop);
      stopWatching();
      started.delete(id);
    }
  };

  /** The task's outcome; over budget or failing twice, the file's refusal. Throws when no thread could begin it. */
  const check = async (task: CheckTask): Promise<CheckOutcome | SyncError> => {
    if (isClosed) throw new Error('the file checks are closed');
    await slots.take();
    try {
      let last = await attempt(task);
      if ('crash' in last && last.hasStarted && !isClosed) {
        logger.warn({ kind: task.kind, err: last.crash }, 'a check thread failed; checking the file again on a fresh thread');
        last = await attempt(task);
      }
      if ('outcome' in last) return last.outcome;
      if ('failure' in last) return overBudget(task.kind, last.failure, config);
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
      return verdictOf<EventsFileResult>(await check({ kind: 'events', bytes, format, maxLineBytes: options.maxLineBytes }));
    },
    async close() {
      isClosed = true;
      const pools = [...lanes.values()];
      lanes.clear();
      await Promise.all(pools.map(async (pool) => (await pool).close()));
    },
  };
}

/** A lane's piscina, loaded and made at its first check; its threads start as files come. */
async function openLane(
  config: ChecksConfig,
  lane: Lane,
  threads: number,
  logger: Logger,
  onStarted: (id: number, tid: number | null) => void,
): Promise<Piscina> {
  const { Piscina } = await import('piscina');
  const pool = new Piscina({
    filename: taskFileUrl().href,
    name: 'default',
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: config.idleMs,
    concurrentTasksPerWorker: 1,
    resourceLimits: { maxOldGenerationSizeMb: config[lane].memoryMb },
  });
  pool.on('message', (message: Partial<CheckStarted>) => {
    if (typeof message.checkStarted === 'number') onStarted(message.checkStarted, message.tid ?? null);
  });
  // A thread that fails with no check on it (piscina replaces it): told, never thrown at the event loop.
  pool.on('error', (error: unknown) => logger.warn({ err: error, lane }, 'a check thread failed between checks'));
  return pool;
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
