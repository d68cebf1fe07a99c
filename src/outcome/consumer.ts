/**
 * The spool holder's consumer of outcome messages (`queue/outcome-list.ts`): it takes the oldest
 * messages in batches, moves their files (outcome/apply.ts), then removes the batch. Waiting costs
 * one blocking command on a connection of its own, woken by the next message.
 *
 * The loop, one turn at a time: a pass (one batch applied, then settled in the call that reads the
 * next one) → when the pass found nothing, idle (wake `drain` callers, wait for the next message) →
 * again, until `stop`. A Redis error pauses the loop and is logged once per failing stretch.
 *
 * Redis' side is one script call a batch (`take`, issue 46): the settle of the batch applied, the
 * journey's steps its moves recorded, the retries that came due (once a second at most), and the
 * read of the next batch. The blocking wait only follows a read that found the list empty; the
 * message that wakes it is the next batch, one message long (the wait returns it), whose settle
 * reads what came meanwhile: a wake costs the wait and one call, not a read of its own. A batch
 * shorter than a full one is settled no sooner than GATHER_MS after it was read, so that a trickle
 * of messages makes one call every GATHER_MS rather than one a message.
 */
import { access, constants } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isRedisUnavailable } from '../store/redis-health.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { loopTurn } from '../loop-turn.js';
import type { ProgressTrack } from '../progress.js';
import type { Keys } from '../store/keys.js';
import { openOutcomeInbox, type OutcomeEntry, type OutcomeInbox } from '../queue/outcome-list.js';
import type { OutcomeMessage } from '../store/payloads.js';
import type { RedisConnection } from '../store/redis.js';

/** Messages taken at once; applied BATCH_CONCURRENCY at a time (moves of one name are serialized in files.ts). */
const BATCH = 64;
const BATCH_CONCURRENCY = 16;
/**
 * A batch shorter than BATCH is settled (in the call that reads the next) no sooner than this after
 * it was read, so that the messages of a steady trickle gather into one call rather than one call
 * each: in the round-trips bench (200 labels settling in ~1 s) the consumer made 0.59 calls and
 * 0.31 blocking waits a label, each call ~5 commands besides the steps it carries (issue 46). A
 * file's move is not delayed (a batch is applied as soon as it is read); its message leaves the
 * list up to this much later, which a crash in between only makes applied twice (idempotent).
 */
const GATHER_MS = 20;
/** Longest one blocking wait: retries that came due are looked at least this often. */
const WAIT_MS = 1000;
/** Longest `stop` waits for a pass under way. */
const STOP_WAIT_MS = 5000;
/** After Redis errors, the next try waits this long (then again). */
const ERROR_PAUSE_MS = 1000;
/** A folder of the spool that may not be written in: every move into it fails alike until a person acts. */
const DENIED_CODES: ReadonlySet<string> = new Set(['EACCES', 'EPERM', 'EROFS']);
/** The spool's disk full: said once by spool/disk-state.ts. */
const FULL_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);
/**
 * While moves are refused, the folders are looked at this often (then at twice the wait, up to
 * PROBE_MAX_MS, while a look that found them open did not make a move work): once a person opens
 * them, the files waiting are moved at once, not at their retry's time (up to an hour away).
 */
const PROBE_FIRST_MS = 2000;
const PROBE_MAX_MS = 10 * 60_000;
/** The most retries one `take` moves back to the list (its script's LIMIT). */
const RETRIES_MOVED_MAX = 256;

/** What the overview shows of moves refused: the first folder and code said, since when, and the failed moves since. */
export interface MovesRefused {
  code: string;
  folder: string | null;
  /** ms since the epoch. */
  since: number;
  failedMoves: number;
}

/** The moves this process's consumer finds refused now (one process holds one spool), or null. */
let movesRefusedNow: MovesRefused | null = null;

export function movesRefused(): MovesRefused | null {
  return movesRefusedNow === null ? null : { ...movesRefusedNow };
}

export interface OutcomeConsumerDeps {
  redis: RedisConnection;
  keys: Keys;
  spoolId: string;
  /** Moves one outcome's files; throws when the move failed (it is tried again later). */
  apply(message: OutcomeMessage): Promise<void>;
  /** Whether this process still holds the spool's lease: nothing is applied or removed once it does not. */
  isHeld(): boolean;
  /**
   * The journey's steps to write with the next call (the file-end steps of the batch just applied):
   * `journeyAppendCall`'s keys and arguments, taken (not written again), or null for none.
   */
  takeJourneySteps?(): { keys: readonly string[]; args: ReadonlyArray<string | number> } | null;
  /** The consumer's passes in progress, for the watchdog (src/progress.ts): a move that never returns holds every file behind it. */
  progress?: ProgressTrack;
  clock: Clock;
  logger: Logger;
}

export interface OutcomeConsumer {
  /** Waits until no message waits in the list and none is being applied, at most `maxMs`. */
  drain(maxMs: number): Promise<void>;
  stop(): Promise<void>;
}

type FailedEntry = OutcomeEntry & { error: string };
/** A batch as a call read it, and when (the clock's ms): its settle waits for the gather from then. */
type ReadBatch = { batch: OutcomeEntry[]; readAt: number };

export function startOutcomeConsumer(deps: OutcomeConsumerDeps): OutcomeConsumer {
  const consumer = new OutcomeLoop(deps);
  return { drain: (maxMs) => consumer.drain(maxMs), stop: () => consumer.stop() };
}

class OutcomeLoop {
  private readonly inbox: OutcomeInbox;
  private readonly log: Logger;
  private readonly loop: Promise<void>;
  private isStopped = false;
  private nextDueCheck = 0;
  private isFailing = false;
  private idleWaiters: Array<() => void> = [];
  private isIdle = false;
  /**
   * Folders the moves may not write in (code and folder → moves failed since it was said). Said
   * once, not once a file and try: each failed move is tried again after 1, 2, 4… s (up to an
   * hour), and a closed archive/ folder under a backlog made one error line with its stack a file
   * and a try. Said again, at info, when a move works.
   */
  private readonly denied = new Map<string, { folder: string | null; failed: number }>();
  /** The look at the refused folders (see PROBE_FIRST_MS), and its wait now. */
  private probe: NodeJS.Timeout | undefined;
  private probeMs = PROBE_FIRST_MS;
  /** The next call brings every waiting retry forward (a refused folder is open again). */
  private isRetryAllDue = false;
  /** The batch the last call read, not applied yet, and when it was read (the clock's ms); null: the next pass reads one. */
  private next: ReadBatch | null = null;

  constructor(private readonly deps: OutcomeConsumerDeps) {
    this.inbox = openOutcomeInbox(deps.redis, deps.keys, deps.spoolId);
    this.log = deps.logger;
    this.loop = this.run();
  }

  async drain(maxMs: number): Promise<void> {
    const deadline = Date.now() + maxMs;
    const timeLeft = (): number => Math.max(0, deadline - Date.now());
    while (timeLeft() > 0 && !this.isStopped) {
      // Redis away (its commands wait for the reconnect) ends the drain at the deadline, not never.
      const waiting = await Promise.race([
        this.inbox.pending().then(
          ({ waiting: n }) => n,
          () => -1,
        ),
        pause(timeLeft()).then(() => -1),
      ]);
      if (waiting < 0 || (waiting === 0 && this.isIdle)) return;
      await Promise.race([new Promise<void>((resolve) => this.idleWaiters.push(resolve)), pause(Math.min(50, Math.max(1, timeLeft())))]);
    }
  }

  async stop(): Promise<void> {
    this.isStopped = true;
    // Not this process's to say once it stops holding the spool: the next holder says its own.
    if (this.denied.size > 0) movesRefusedNow = null;
    clearTimeout(this.probe);
    await this.inbox.close();
    // A pass waiting on Redis (away: its commands wait for the reconnect) is not waited for long;
    // what it did not settle stays in the list for the next holder.
    await Promise.race([this.loop, pause(STOP_WAIT_MS)]);
  }

  private async run(): Promise<void> {
    while (!this.isStopped) {
      try {
        await this.turn();
      } catch (error) {
        if (this.isStopped) break;
        // Redis away, full or failing over: redis-health.ts says so once for the process.
        if (isRedisUnavailable(error)) this.log.debug({ err: error }, 'reading outcome messages failed: Redis cannot take writes now; trying again');
        else if (!this.isFailing) this.log.error({ err: error }, 'reading outcome messages failed; trying again');
        this.isFailing = true;
        await pause(ERROR_PAUSE_MS);
      }
    }
  }

  private async turn(): Promise<void> {
    const ended = this.deps.progress?.begin();
    const didWork = await this.pass().finally(ended);
    if (this.isFailing) this.log.info('outcome messages are read again');
    this.isFailing = false;
    if (!didWork) await this.idle();
  }

  private async pass(): Promise<boolean> {
    // Read by the last settle, or now (after a wait, an error, or a pass without the lease).
    const { batch, readAt } = this.next ?? (await this.take());
    this.next = null;
    if (batch.length === 0) return false;
    // The lease checked before and after: a batch applied by a process that lost the lease meanwhile
    // stays in the list for the next holder (applying it again moves nothing twice).
    if (!this.deps.isHeld()) return false;
    const failed = await this.applyBatch(batch);
    if (batch.length < BATCH) await this.gather(readAt);
    if (!this.deps.isHeld()) return false;
    // An error leaves `next` null: the batch, not removed, is read again and applied again.
    this.next = await this.take({ batch, failed });
    return true;
  }

  /** Waits until GATHER_MS after `readAt` (not past a stop), for the messages of a trickle to gather. */
  private async gather(readAt: number): Promise<void> {
    const left = readAt + GATHER_MS - this.deps.clock.now();
    if (left > 0 && !this.isStopped) await pause(Math.min(left, GATHER_MS));
  }

  /** One call: settles `settled` (if any) with the journey's steps, moves due retries (once a `WAIT_MS`), reads the next batch. */
  private async take(settled?: { batch: OutcomeEntry[]; failed: FailedEntry[] }): Promise<ReadBatch> {
    const now = this.deps.clock.now();
    const isDueCheck = now >= this.nextDueCheck;
    if (isDueCheck) this.nextDueCheck = now + WAIT_MS;
    // A refused folder open again: every waiting retry is due now (a call moves up to 256; the rest with the next).
    const isRetryAll = this.isRetryAllDue;
    const { batch, movedDue } = await this.inbox.take({
      settled,
      journey: this.deps.takeJourneySteps?.() ?? null,
      dueBy: isRetryAll ? Number.MAX_SAFE_INTEGER : isDueCheck ? now : undefined,
      read: BATCH,
      now,
    });
    if (isRetryAll && movedDue < RETRIES_MOVED_MAX) this.isRetryAllDue = false;
    return { batch, readAt: now };
  }

  /** Nothing to apply: wakes `drain` callers, then waits for the next message (or, without the lease, a while). */
  private async idle(): Promise<void> {
    this.isIdle = true;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
    if (!this.deps.isHeld()) await pause(ERROR_PAUSE_MS);
    else {
      // The message that woke the wait is the next batch (of one): its settle reads the rest.
      const head = await this.inbox.waitForMessages(WAIT_MS);
      this.next = head === null ? null : { batch: [head], readAt: this.deps.clock.now() };
    }
    this.isIdle = false;
  }

  private async applyBatch(batch: OutcomeEntry[]): Promise<FailedEntry[]> {
    const failed: FailedEntry[] = [];
    let next = 0;
    // On a local disk a move's file calls are synchronous (spool/file-calls.ts) and resolve at once,
    // so a batch of 64 moves ran as one chain of promise callbacks: ~1.5 ms a failed file (its
    // report written, two renames, three lstats), ~100 ms without a turn of the loop, the large
    // drop's worst event-loop delays (BENCHMARKS.md, issue 39). The runners let the loop turn
    // between moves (src/loop-turn.ts).
    const run = async (): Promise<void> => {
      for (;;) {
        await loopTurn();
        // Another runner may have taken the last one while this one waited for its turn.
        const entry = batch[next++];
        if (entry === undefined) return;
        const error = await this.applyEntry(entry);
        if (error !== null) failed.push({ ...entry, error });
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, batch.length) }, run));
    return failed;
  }

  /** Applies one message; returns why it failed (it stays in the list for a retry), or null. */
  private async applyEntry(entry: OutcomeEntry): Promise<string | null> {
    if (entry.isUnreadable === true) {
      this.log.error({ entry: entry.message }, 'an unreadable outcome message was set aside (kept in the spool’s failed outcomes)');
      return 'not an outcome message';
    }
    try {
      await this.deps.apply(entry.message);
      if (this.denied.size > 0) this.movesAgain();
      return null;
    } catch (error) {
      const about = { jobId: entry.message.jobId, kind: entry.message.kind, failures: entry.failures + 1, err: error };
      const { code, path, dest } = error as NodeJS.ErrnoException & { dest?: string };
      // Redis away, full or failing over: said once by redis-health.ts; the move is tried again.
      if (isRedisUnavailable(error)) this.log.debug(about, 'moving a file failed: Redis cannot take writes now; will retry');
      else if (code !== undefined && FULL_CODES.has(code)) this.log.debug(about, "moving a file failed: the spool's disk is full; will retry");
      else if (code !== undefined && DENIED_CODES.has(code)) this.deniedMove(about, code, dest ?? path);
      else this.log.error(about, 'moving a file failed; will retry');
      return (error as Error).message;
    }
  }

  private deniedMove(about: Record<string, unknown>, code: string, path: string | undefined): void {
    const folder = path === undefined ? null : dirname(path);
    const key = `${code} ${folder ?? ''}`;
    const failed = this.denied.get(key)?.failed;
    this.denied.set(key, { folder, failed: (failed ?? 0) + 1 });
    movesRefusedNow ??= { code, folder, since: this.deps.clock.now(), failedMoves: 0 };
    movesRefusedNow.failedMoves += 1;
    this.probeFolders();
    if (failed !== undefined) {
      this.log.debug(about, 'moving a file failed: the spool may not be written there; will retry');
      return;
    }
    this.log.error(
      { ...about, code, folder },
      code === 'EROFS'
        ? "moving files failed: the spool's file system is read-only (mounted so, or remounted so after a disk error). Each file waits in .inflight/ and is moved again after 1, 2, 4… s (up to an hour); said once until a move works"
        : 'moving files failed: carrier-sync may not write in this spool folder; give it write access. Each file waits in .inflight/ and is moved again after 1, 2, 4… s (up to an hour); said once until a move works',
    );
  }

  private movesAgain(): void {
    const failedMoves = [...this.denied.values()].reduce((sum, { failed }) => sum + failed, 0);
    this.log.info({ failedMoves, folders: [...this.denied.keys()] }, 'files move again');
    this.denied.clear();
    movesRefusedNow = null;
    clearTimeout(this.probe);
    this.probe = undefined;
    this.probeMs = PROBE_FIRST_MS;
  }

  /** Looks at the refused folders after `probeMs` (unless a look is set already): open again, every waiting retry comes due. */
  private probeFolders(): void {
    if (this.probe !== undefined || this.isStopped) return;
    this.probe = setTimeout(() => {
      void this.lookAtFolders().finally(() => {
        this.probe = undefined;
        if (this.denied.size > 0 && !this.isRetryAllDue) this.probeFolders();
      });
    }, this.probeMs);
    this.probe.unref();
  }

  private async lookAtFolders(): Promise<void> {
    const folders = [...new Set([...this.denied.values()].flatMap(({ folder }) => (folder === null ? [] : [folder])))];
    const open = await Promise.all(
      folders.map((folder) =>
        access(folder, constants.W_OK).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (this.denied.size === 0 || !open.some(Boolean)) return;
    this.log.info(
      { folders: folders.filter((_, i) => open[i]) },
      'a spool folder that refused moves may be written in again: the files waiting for it are moved now',
    );
    this.isRetryAllDue = true;
    // Moves that fail again (a folder open to writes that still refuses a rename) make the next look wait longer.
    this.probeMs = Math.min(this.probeMs * 2, PROBE_MAX_MS);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
