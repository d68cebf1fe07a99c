/**
 * The job processor shared by the three item queues: push gate → API call → done, or a SyncError
 * whose disposition decides what happens next:
 *   retry        → BullMQ's exponential backoff with jitter, until maxAttempts (then dead-letter);
 *                  DELIVERY_NOT_FOUND only until notFoundAttempts (the delivery may arrive late);
 *                  an API that is unavailable (5xx, network, timeout) past maxAttempts: retried
 *                  at the backoff's next step (at most ~5 min) without spending, until
 *                  maxUnavailableMs after the failure that spent the last attempt (an outage does
 *                  not send the backlog to the dead letters)
 *   rate-limited → every process pauses for Retry-After; the job goes back to delayed without
 *                  spending an attempt, until it has been held back maxRateLimitedMs in all
 *   pause        → 401: the auth gate pauses the queues; the job waits without spending an attempt
 *   dead-letter  → UnrecoverableError: the job stays in the failed set (the DLQ)
 * A Redis error met anywhere in a run (the gate, the answer's write, a step aside; MOVED after a
 * Cluster promotion, READONLY, a closed connection…) is none of these: it is no answer of the API, so
 * the job goes back to delayed without spending an attempt (`onRedisError`), like any Redis outage.
 *
 * Redis work per item: one round trip before the request (the push gate: order, 401 gate, rate
 * limit, the attempt record; with replicas, WAIT for it in the same round trip) and one after it
 * (leave: slot stamp, counters, order bookkeeping and the outcome message of a file's item, one
 * script), besides BullMQ's own fetch and completion. Every write after a request goes through
 * kept-answers.ts: an answer Redis cannot take now is kept and written when it can, never dropped
 * and never bought again.
 */
import { isAnswerBeingWritten } from './kept-answers.js';
import { takeFailpoint } from '../failpoints.js';
import type { Job } from 'bullmq';
import { DelayedError, UnrecoverableError } from '../queue/bullmq.js';
import { isSyncError, SyncError } from '../errors.js';
import { reasonOf, renderReason, type Reason } from '../i18n/reason.js';
import { countActivity } from '../store/activity.js';
import { isRedisError, isRedisUnavailable } from '../store/redis-errors.js';
import { wakeEvent } from '../gate/event-wake.js';
import type { AttemptRecord } from '../queue/attempts.js';
import type { ItemJob, ItemResult } from '../store/payloads.js';
import { attemptMember, type AttemptAnswer, type GateVerdict, type SlotUse } from '../gate/push-gate.js';
import type { PushDeps } from './deps.js';
import { writeAnswer } from './answer-write.js';
import { finishItem } from './finish.js';
import { sendItem } from './send.js';
import {
  bindSpan,
  contextOf,
  inSpan,
  isTracingOn,
  itemAttributes,
  loggerIn,
  messagingAttributes,
  spanBoundTo,
  spanContextOf,
  SpanKind,
  withSpan,
  type Span,
} from '../trace.js';

/** Longest a job holds its worker slot waiting for the shared limiter before stepping aside. */
export const MAX_SLOT_WAIT_MS = 15_000;
/** Longest one wait in process before asking the gate again (a resumed pause is seen quickly). */
const MAX_NAP_MS = 1_000;
/** A parked event wakes when the event before it finishes; this is only the safety net. */
const PARK_MS = 5_000;
const AUTH_RETRY_MS = 1_000;
/** A request held back because its attempt record did not reach a replica in time: asked again after this. */
const UNREPLICATED_RETRY_MS = 1_000;
/** The journey's answer to an attempt that did not leave: no replica acknowledged its record. */
const UNREPLICATED_ANSWER: AttemptAnswer = notSent(0, reasonOf('reason.notSent.unreplicated'));

/**
 * An attempt's answer when the request did not leave, or no answer of the API came for a reason
 * of Redis: the English text, and its reason so that the history shows it in its reader's language.
 */
function notSent(durationMs: number, reason: Reason): AttemptAnswer {
  return { durationMs, message: renderReason('en', reason), reason };
}

/** A Redis error's message as an answer's detail: its first line, cut short. */
const redisErrorText = (error: unknown): string =>
  String((error as Error).message)
    .split('\n')[0]!
    .slice(0, 100);
const PROBE_MAX_MS = 300_000;
/** A job that met a Redis error that passes (a failover, an outage, a redirect): asked again after this. */
const REDIS_RETRY_MS = 1_000;
/** One that met another Redis error (a script's ERR, WRONGTYPE: not expected to pass on its own): asked again after this, told at error level. */
const REDIS_FAULT_RETRY_MS = 30_000;

export function createProcessor(deps: PushDeps): (job: Job<ItemJob>, token?: string) => Promise<string> {
  const run = processJob(deps);
  const runs: RunsUnderWay = new Map();
  return (job, token) =>
    oneRunAtATime(runs, String(job.id), () =>
      takeFailpoint('job-run-freeze')
        ? frozenRun(deps, String(job.id))
        : isTracingOn()
          ? traced(job, (span) => {
              // This run's span, for its request and its end (sent within it), and on its log lines.
              bindSpan(job, span);
              return processJob({ ...deps, logger: loggerIn(deps.logger, span) })(job, token);
            })
          : run(job, token),
    );
}

/** The runs of this processor's jobs under way in this process, by job id. */
type RunsUnderWay = Map<string, Promise<unknown>>;

/**
 * One run of a job at a time in this process. BullMQ hands a job out again when its lock lapsed
 * while a run still holds it: after a failover whose promoted replica missed the lock's renewals
 * (Redis away longer than the lock), or a main thread starved past it. The stalled check puts the
 * job back in wait and this very worker may take it again, while the first run's request is still
 * on the wire. The gate cannot tell the two runs apart: the attempt record names this process
 * (its owner) and the document or event lock names the job, both the second run's own, so it let
 * the second run go too, and the item was sent twice, both as attempt 1 (issue 44; the loaded
 * Sentinel failover sweep). `kept.settled` covered only a first run whose answer Redis had not
 * taken yet, not one still waiting for its answer. So a second run waits here for the first to
 * end; its gate then finds the answer written (already accepted) or the attempt ended. Runs in
 * another process are told apart by the attempt record's owner (gate/attempt-owner.ts).
 */
async function oneRunAtATime<T>(runs: RunsUnderWay, jobId: string, run: () => Promise<T>): Promise<T> {
  const ended = runsInProgress.begin(jobId);
  try {
    for (let earlier = runs.get(jobId); earlier !== undefined; earlier = runs.get(jobId)) await earlier.catch(() => undefined);
    // No await between the check above and the set below: a third run waiting too sees this one.
    const current = run();
    runs.set(jobId, current);
    try {
      return await current;
    } finally {
      if (runs.get(jobId) === current) runs.delete(jobId);
    }
  } finally {
    ended();
  }
}

/**
 * The job runs under way in this thread, with when each began (a run waiting for an earlier run
 * of its job included): the watchdog's check that no run lasts past the bound (a run waiting for
 * something that never comes holds its job active, its lock renewed, and its delivery's later
 * events parked behind it, without a word).
 */
const runsInProgress = (() => {
  const started = new Map<number, { jobId: string; since: number }>();
  let next = 0;
  return {
    begin(jobId: string): () => void {
      const id = next++;
      started.set(id, { jobId, since: Date.now() });
      return () => void started.delete(id);
    },
    oldest(): { jobId: string; since: number } | null {
      // A Map keeps insertion order: the first entry is the oldest run still going. A run whose
      // answer is being written waits on Redis (away, or a replica not acknowledging): Redis' own
      // state, told by redis-health.ts or replica-wait.ts, not a run waiting for nothing.
      for (const run of started.values()) if (!isAnswerBeingWritten(run.jobId)) return run;
      return null;
    },
  };
})();

/** The oldest job run under way in this thread, or null (runtime/watchdog/stall-checks.ts). */
export function oldestRun(): { jobId: string; since: number } | null {
  return runsInProgress.oldest();
}

/**
 * One run of a job as a CONSUMER span, the child of the span that queued it and linked to it: an
 * item's retries stay in the item's one trace (at most its attempts and steps aside: small), and
 * tools that follow the messaging conventions' link find the enqueue too. A job queued without a
 * trace (tracing was off) starts a trace of its own. A step aside (DelayedError) is no error.
 */
function traced(job: Job<ItemJob>, run: (span: Span) => Promise<string>): Promise<string> {
  const item = job.data;
  const producer = spanContextOf(item.trace);
  // The item's names (delivery id, file) are on its root span: here, what is this run's (and the
  // names too when this run is the root: the job was queued untraced).
  const attributes = {
    ...messagingAttributes(item.kind, 'process'),
    'carrier_sync.attempt': job.attemptsMade + 1,
    ...(producer === undefined ? itemAttributes(item) : {}),
  };
  const links = producer === undefined ? [] : [{ context: producer }];
  return inSpan(
    PROCESS_SPAN_NAME[item.kind],
    { kind: SpanKind.CONSUMER, attributes, links, parent: contextOf(producer), isError: isRunError },
    async (span) => {
      try {
        const result = await run(span);
        span.setAttribute('carrier_sync.result', result);
        return result;
      } catch (error) {
        span.setAttribute(
          'carrier_sync.result',
          error instanceof DelayedError ? 'stepped-aside' : error instanceof UnrecoverableError ? 'dead-lettered' : 'failed',
        );
        throw error;
      }
    },
  );
}

const PROCESS_SPAN_NAME: Readonly<Record<ItemJob['kind'], string>> = { label: 'process label', cte: 'process cte', collecting: 'process collecting' };
const isRunError = (error: unknown): boolean => !(error instanceof DelayedError);

function processJob(deps: PushDeps): (job: Job<ItemJob>, token?: string) => Promise<string> {
  const run = runJob(deps);
  return async (job, token) => {
    try {
      return await run(job, token);
    } catch (error) {
      if (error instanceof DelayedError || error instanceof UnrecoverableError || isSyncError(error) || !isRedisError(error)) throw error;
      return onRedisError(deps, job, token, error);
    }
  };
}

/**
 * A Redis error met by a run: never the API's refusal, never a spent attempt. The job goes back to
 * delayed; when Redis cannot take even that, the run ends as stepped aside all the same (a
 * DelayedError: BullMQ then neither fails the job nor spends an attempt), the job's lock lapses and
 * BullMQ's stalled check hands it to a worker again once Redis answers. An answer the API gave in
 * this run was written before (kept-answers.ts keeps it through an outage), so the next run's gate
 * finds it: nothing is sent twice.
 */
async function onRedisError(deps: PushDeps, job: Job<ItemJob>, token: string | undefined, error: unknown): Promise<never> {
  const isPassing = isRedisUnavailable(error);
  const context = { kind: job.data.kind, deliveryId: job.data.deliveryId, jobId: String(job.id), attempt: job.attemptsMade + 1, err: error };
  // A failover or an outage is told once by redis-health.ts; another Redis error is news.
  if (isPassing) deps.logger.debug(context, 'Redis error during a push: the item waits and is tried again, no attempt spent');
  else deps.logger.error(context, 'Redis refused a command of a push: the item waits and is tried again, no attempt spent');
  try {
    await job.moveToDelayed(Date.now() + (isPassing ? REDIS_RETRY_MS : REDIS_FAULT_RETRY_MS), token);
  } catch (moveError) {
    if (!isRedisError(moveError)) throw moveError;
    deps.logger.debug({ ...context, err: moveError }, 'Redis cannot take the job back to delayed now: its lock lapses and it is taken up again');
  }
  throw new DelayedError();
}

function runJob(deps: PushDeps): (job: Job<ItemJob>, token?: string) => Promise<string> {
  return async (job, token) => {
    const item = job.data;
    const jobId = String(job.id);
    const started = deps.clock.now();
    const deadline = started + MAX_SLOT_WAIT_MS;
    // This process may hold this job's answer still (Redis refused it; BullMQ handed the job back).
    await deps.kept.settled(jobId);

    for (;;) {
      const member = attemptMember(jobId);
      let verdict: GateVerdict;
      try {
        verdict = await deps.gate.enter(item, jobId, job.attemptsMade + 1, member);
      } catch (error) {
        if (isRedisError(error)) await releaseAttempt(deps, item, jobId, member, error);
        throw error;
      }
      switch (verdict.action) {
        case 'superseded':
          await finishItem(deps, job, 'superseded', null);
          return 'superseded';
        case 'already-accepted':
          // A document: the API holds these bytes already (a run that sent them died before it
          // finished). An event: another run of this job finished it (a stalled job taken over).
          await finishItem(deps, job, 'accepted', null);
          return 'accepted';
        case 'park':
          return park(deps, job, token, Math.max(PARK_MS, verdict.headDueMs - Date.now()));
        case 'auth':
          return stepAside(job, token, AUTH_RETRY_MS);
        case 'unreplicated':
          // The attempt record is not on a replica: the request does not leave (replica-wait.ts).
          await writeAnswer(deps, jobId, verdict.slot, async () => {
            await deps.gate.leave(item, jobId, { slot: verdict.slot, respondedAt: performance.now() }, null, UNREPLICATED_ANSWER);
          });
          return stepAside(job, token, UNREPLICATED_RETRY_MS);
        case 'owned':
        case 'busy':
        case 'wait': {
          const napMs = Math.min(verdict.ms, MAX_NAP_MS);
          if (deps.clock.now() + napMs > deadline) return stepAside(job, token, verdict.action === 'wait' ? verdict.ms : napMs);
          await new Promise((resolve) => setTimeout(resolve, napMs));
          continue;
        }
        case 'go':
          return send(deps, job, token, verdict, started);
      }
    }
  };
}

/**
 * An enter that met a Redis error (its reply, or its WAIT's, lost with a connection a failover cut)
 * may still have landed: its attempt record would then name this live process for a request that
 * never left, and every run of the job elsewhere would wait on that owner for good (the failover
 * sweep's Sentinel seed 29: an event's file left in `.inflight/`, its job re-run five times, each
 * 'owned'). So the record is released, as an answer is written (kept until Redis takes it, and
 * confirmed on a replica): when it names this attempt, a leave with a 'not sent' answer; when it
 * does not (the enter never landed), nothing.
 */
async function releaseAttempt(deps: PushDeps, item: ItemJob, jobId: string, member: string, error: unknown): Promise<void> {
  const answer = notSent(0, reasonOf('reason.notSent.redisAtGate', { error: redisErrorText(error) }));
  await writeAnswer(deps, jobId, member, async () => {
    if (!(await deps.gate.confirm(jobId, member)).isPending) return;
    await deps.gate.leave(item, jobId, { slot: member, respondedAt: performance.now() }, null, answer);
  });
}

async function send(
  deps: PushDeps,
  job: Job<ItemJob>,
  token: string | undefined,
  { slot, isProbe, authEpoch }: Extract<GateVerdict, { action: 'go' }>,
  started: number,
): Promise<string> {
  const item = job.data;
  const jobId = String(job.id);
  let result: Extract<ItemResult, 'accepted' | 'repeat'>;
  // A probe tests the key the files hold now (a `*_FILE` key fixed since the 401: config/secret-file.ts).
  if (isProbe) deps.client.refreshKeys?.();
  const sentAt = performance.now();
  try {
    // The request's span is a child of this run's (started in the call's synchronous part).
    result = await withSpan(spanBoundTo(job), () => sendItem(deps.client, item));
  } catch (error) {
    const used: SlotUse = { slot, respondedAt: performance.now() };
    if (isFromRedis(error)) {
      // No answer of the API (the call itself never touches Redis; whatever did, it was not the
      // API refusing): the attempt is released as not answered, and the run steps aside.
      const answer = notSent(used.respondedAt - sentAt, reasonOf('reason.notSent.redisAtRequest', { error: redisErrorText(error) }));
      await writeAnswer(deps, jobId, slot, () => deps.gate.leave(item, jobId, used, null, answer).then(() => undefined));
      throw error;
    }
    const syncError = toSyncError(error);
    if (isProbe) await onProbeAnswer(deps, syncError);
    return onFailure(deps, job, token, used, authEpoch, syncError, answerOf(syncError, used.respondedAt - sentAt));
  }
  const respondedAt = performance.now();
  // The API client takes only a 2xx as success, and the contract answers these endpoints with 200.
  const answerWrite = await writeAnswer(deps, jobId, slot, () =>
    finishItem(deps, job, result, { slot, respondedAt }, undefined, { status: 200, durationMs: respondedAt - sentAt }),
  );
  if (isProbe) await onProbeAnswer(deps, null);
  deps.logger.info(
    {
      kind: item.kind,
      deliveryId: item.deliveryId,
      jobId,
      attempt: job.attemptsMade + 1,
      status: 200,
      durationMs: deps.clock.now() - started,
      result,
      answerWrite,
    },
    'item sent',
  );
  return result;
}

/**
 * The probe's answer. The key works again when the API judged the request: a 2xx, or a 4xx other
 * than 401 and 429. A 401 keeps the gate closed and backs off. A 5xx, a 429, a timeout or a reset
 * says nothing about the key (a proxy or the API's front may answer them before checking it): the
 * gate stays closed and the next probe comes after the same backoff.
 */
async function onProbeAnswer(deps: PushDeps, error: SyncError | null): Promise<void> {
  const backoffMs = (probes: number): number => Math.min(deps.delivery.authProbeMs * 2 ** probes, PROBE_MAX_MS);
  if (error?.disposition === 'pause') {
    const failure = await deps.authGate.probeRefused(backoffMs);
    deps.logger.debug({ probes: failure?.probes, nextProbeAt: failure?.nextProbeAt }, 'auth probe: the key is still refused');
    return;
  }
  const isJudged = error === null || (error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 429);
  if (!isJudged) {
    const failure = await deps.authGate.probeRefused(backoffMs, { isInconclusive: true });
    deps.logger.debug({ code: error.code, nextProbeAt: failure?.nextProbeAt }, 'auth probe: no answer about the key; probing again later');
    return;
  }
  await deps.authGate.clear();
  deps.logger.info({ status: error?.status ?? 200 }, 'auth probe: the API accepts the key again; queues resumed');
}

/** A failed request as the journey records it: no status when no response came (network, timeout). */
function answerOf(error: SyncError, durationMs: number): AttemptAnswer {
  return {
    durationMs,
    code: error.code,
    ...(error.status === undefined ? {} : { status: error.status }),
    ...(error.apiCode === undefined ? {} : { apiCode: error.apiCode }),
    message: error.apiMessage ?? error.message,
  };
}

async function onFailure(
  deps: PushDeps,
  job: Job<ItemJob>,
  token: string | undefined,
  slot: SlotUse,
  authEpoch: number,
  error: SyncError,
  answer: AttemptAnswer,
): Promise<never> {
  const item = job.data;
  const jobId = String(job.id);
  const attempt = job.attemptsMade + 1;
  const context = { kind: item.kind, deliveryId: item.deliveryId, jobId, attempt, status: error.status, code: error.code, apiCode: error.apiCode };
  // The answer (the gate's leave, which releases the attempt record) is written first and kept
  // through an outage; the writes after it may fail: the job is then retried, as it would be anyway.
  const leave = (): Promise<void> =>
    writeAnswer(deps, jobId, slot.slot, async () => void (await deps.gate.leave(item, jobId, slot, null, answer))).then(() => undefined);

  if (error.disposition === 'rate-limited') {
    await leave();
    const holdMs = error.retryAfterMs ?? deps.delivery.backoffMs * 2 ** Math.min(job.attemptsMade, 10);
    await deps.limiter.pause(holdMs);
    await deps.stats.add('rate_limited', item.kind);
    await countActivity(deps.redis, deps.keys, 'rate_limited', deps.clock.now());
    const heldMs = Number(await deps.redis.hincrby(deps.keys.attempts(`${jobId}:held`), 'ms', holdMs));
    if (heldMs <= deps.delivery.maxRateLimitedMs) {
      deps.logger.warn({ ...context, holdMs }, 'API rate limit hit (429); all sending paused');
      return stepAside(job, token, holdMs);
    }
    deps.logger.warn({ ...context, heldMs }, '429s held this item back too long; spending an attempt');
  }

  if (error.disposition === 'pause') {
    await leave();
    const isFirst = await deps.authGate.trip({ at: new Date(deps.clock.now()).toISOString(), endpoint: item.kind, message: error.message }, authEpoch);
    if (isFirst)
      deps.logger.error(context, 'API refused the key (401): queues paused until a probe with the key succeeds (a changed key file is probed at once)');
    return stepAside(job, token, AUTH_RETRY_MS);
  }

  const failure: AttemptRecord = {
    attempt,
    at: new Date(deps.clock.now()).toISOString(),
    code: error.code,
    message: error.message,
    ...(error.status === undefined ? {} : { status: error.status }),
    ...(error.apiCode === undefined ? {} : { apiCode: error.apiCode }),
    ...(error.apiMessage === undefined ? {} : { apiMessage: error.apiMessage }),
    ...(error.params === undefined ? {} : { params: error.params }),
  };

  const maxAttempts = job.opts.attempts ?? deps.delivery.maxAttempts;
  const isNotFoundSpent = error.code === 'API_NOT_FOUND' && attempt >= deps.delivery.notFoundAttempts;
  const isSpent = attempt >= maxAttempts;
  // A failure that is not the item's end: the attempt's record rides on the leave (one script).
  const leaveFailed = (): Promise<unknown> =>
    writeAnswer(deps, jobId, slot.slot, async () => {
      await deps.gate.leave(item, jobId, slot, null, answer, { failure: deps.attempts.append(jobId, failure) });
    });
  const unavailableForMs = isSpent && isUnavailable(error) ? await unavailableFor(deps, jobId) : null;
  if (unavailableForMs !== null && unavailableForMs < deps.delivery.maxUnavailableMs) {
    // Its attempts are spent, but the API is unavailable, not refusing it: tried again later, no attempt spent.
    await leaveFailed();
    const retryInMs = Math.round(Math.min(UNAVAILABLE_RETRY_MAX_MS, deps.delivery.backoffMs * 2 ** Math.min(maxAttempts, 20)) * (0.5 + Math.random()));
    deps.logger.warn(
      { ...context, message: error.message, unavailableForMs, retryInMs },
      'item failed, its attempts spent: the API is unavailable, trying again later',
    );
    return stepAside(job, token, retryInMs);
  }
  const isFinal = error.disposition === 'dead-letter' || error.disposition === 'reject-local' || isNotFoundSpent || isSpent;
  // The attempt's record rides on the leave (one script: the answer and the record are one write).
  if (isFinal) {
    await writeAnswer(deps, jobId, slot.slot, () => finishItem(deps, job, 'dead-lettered', slot, error, answer, failure));
    deps.logger.error({ ...context, message: error.apiMessage ?? error.message }, 'item dead-lettered');
    throw new UnrecoverableError(`${error.code}: ${error.message}`);
  }
  // A 429 that held this item too long: its leave is written already (above).
  if (error.disposition === 'rate-limited') await deps.attempts.record(jobId, failure);
  else await leaveFailed();
  deps.logger.warn({ ...context, message: error.message }, 'item failed; will retry');
  throw error;
}

/** An item whose attempts are spent tries an unavailable API again after its backoff's next step, at most this (jittered ±50 %). */
const UNAVAILABLE_RETRY_MAX_MS = 5 * 60_000;

/**
 * The API did not judge the request: a 5xx or an unreadable answer, a network failure, a timeout. Not
 * a failure of our own code (`toSyncError`'s unexpected one): retrying that for hours hides it.
 */
const isUnavailable = (error: SyncError): boolean => error.disposition === 'retry' && error.code !== 'API_NOT_FOUND' && error.params?.['unexpected'] !== true;

/**
 * How long the item has met an unavailable API, from its first such failure past its attempts (kept
 * in its held hash, which the item's end removes): one round trip, on the failure path only.
 */
async function unavailableFor(deps: PushDeps, jobId: string): Promise<number> {
  const key = deps.keys.attempts(`${jobId}:held`);
  const now = deps.clock.now();
  const replies = await deps.redis.multi().hsetnx(key, 'unavailableSince', now).hget(key, 'unavailableSince').exec();
  const since = Number(replies?.[1]?.[1] ?? now);
  return Number.isFinite(since) ? Math.max(0, now - since) : 0;
}

/**
 * Parks an event behind an earlier one of its delivery. The earlier one's finish wakes it; if that
 * came before this job was in delayed (the wake found it not there yet), it wakes itself.
 */
async function park(deps: PushDeps, job: Job<ItemJob>, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  if (!(await deps.gate.isParked(job.data, String(job.id)))) await wakeEvent(deps.redis, deps.keys, String(job.id));
  throw new DelayedError();
}

/** Moves the job back to delayed without spending an attempt. */
async function stepAside(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}

/**
 * What the API call threw, as a SyncError. The client turns every answer and transport failure into
 * one; anything else is unexpected and retried as NETWORK (a Redis error never gets here: `send`).
 */
function toSyncError(error: unknown): SyncError {
  if (isSyncError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SyncError('NETWORK', `unexpected failure: ${message}`, { disposition: 'retry', cause: error, params: { unexpected: true } });
}

/**
 * A Redis error thrown by the API call's code. A socket's failure (ECONNRESET…) there is the API's
 * way failing, not Redis': only a reply error or a Redis message counts.
 */
function isFromRedis(error: unknown): boolean {
  if (isSyncError(error) || !isRedisError(error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code !== 'string' || !code.startsWith('E');
}

/** CARRIER_SYNC_FAILPOINTS=job-run-freeze (tests only): this run waits for good, its job active, its lock renewed. */
function frozenRun(deps: PushDeps, jobId: string): Promise<string> {
  deps.logger.warn({ jobId }, 'failpoint job-run-freeze: this run of the job never ends');
  return new Promise<string>(() => {});
}
