/**
 * The notification loop of a scheduler process: every `checkIntervalMs`, look at each condition,
 * claim the transitions (episodes.ts) and the digests (digests.ts), and hand the messages to the
 * sender, which delivers them in the background. Nothing here is on the push path; a check that
 * fails is logged once per failure streak and tried again at the next tick. While Redis is away
 * the loop waits (redis-watch.ts speaks for that).
 */
import type { Translate } from '../i18n/translate.js';
import type { Logger } from '../log.js';
import { checkApiKey, checkBacklog, checkDisk, checkMoves, checkSpools, type ConditionSources, type Observation, type Words } from './conditions.js';
import { takeDeadLetterDigest, takeRefusalDigest, type DigestOptions, type DigestSources } from './digests.js';
import type { Episodes, Transition } from './episodes.js';
import { makeNotification, type Condition, type Origin } from './message.js';
import type { Sender } from './sender.js';

export interface NotifyLoopDeps {
  sources: ConditionSources & DigestSources;
  episodes: Episodes;
  sender: Sender;
  origin: Origin;
  digest: DigestOptions;
  checkIntervalMs: number;
  /** False while Redis refuses writes or fails over: the checks wait (redis-full.ts speaks for it). */
  isWritable?: () => boolean;
  now: () => number;
  logger: Logger;
}

export interface NotifyLoop {
  /** One pass over every condition (the timer calls it; tests may too). */
  tick(): Promise<void>;
  close(): Promise<void>;
}

export function startNotifyLoop(deps: NotifyLoopDeps): NotifyLoop {
  const { sources, logger: log } = deps;
  const failing = new Set<string>();
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | undefined;
  let isClosed = false;

  const send = (condition: Condition, state: 'firing' | 'resolved' | 'digest', words: Words, nowMs: number): void => {
    deps.sender.send(makeNotification(deps.origin, condition, state, words.summary, words.details, nowMs));
  };

  const apply = async (observation: Observation, nowMs: number): Promise<void> => {
    const transition = await deps.episodes.observe(observation.condition, observation.subject, observation.isBad, observation.forMs, nowMs);
    if (transition === null) return;
    send(observation.condition, transition.state, wordsOf(observation, transition, nowMs, sources.t), nowMs);
  };

  /** Runs one check; a failure is logged when a streak starts, not at every tick. */
  const guarded = async (name: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
      if (failing.delete(name)) log.info({ check: name }, 'notification check works again');
    } catch (error) {
      if (!failing.has(name)) log.warn({ check: name, err: error }, 'notification check failed; trying again at the next tick');
      failing.add(name);
    }
  };

  const pass = async (): Promise<void> => {
    if (sources.redis.status !== 'ready' || deps.isWritable?.() === false) return;
    const nowMs = deps.now();
    await guarded('api-key-refused', async () => apply(await checkApiKey(sources), nowMs));
    await guarded('backlog-stuck', async () => {
      const observation = await checkBacklog(sources, nowMs);
      if (observation !== null) await apply(observation, nowMs);
    });
    await guarded('spool-unwatched', async () => {
      for (const observation of await checkSpools(sources)) await apply(observation, nowMs);
    });
    await guarded('spool-moves-failing', async () => {
      for (const observation of await checkMoves(sources)) await apply(observation, nowMs);
    });
    await guarded('spool-disk-low', async () => {
      const observation = await checkDisk(sources);
      if (observation !== null) await apply(observation, nowMs);
    });
    await guarded('dead-letters', async () => {
      const words = await takeDeadLetterDigest(sources, deps.digest, nowMs);
      if (words !== null) send('dead-letters', 'digest', words, nowMs);
    });
    await guarded('refused-files', async () => {
      const words = await takeRefusalDigest(sources, { ...deps.digest, lookBackMs: deps.checkIntervalMs }, nowMs);
      if (words !== null) send('refused-files', 'digest', words, nowMs);
    });
  };

  const tick = (): Promise<void> => {
    running ??= pass().finally(() => {
      running = null;
    });
    return running;
  };
  const schedule = (): void => {
    if (isClosed) return;
    timer = setTimeout(() => void tick().finally(schedule), deps.checkIntervalMs);
    timer.unref();
  };
  schedule();
  return {
    tick,
    async close() {
      isClosed = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** The message words of a transition: a resolved message says how long the episode lasted. */
function wordsOf(observation: Observation, transition: Transition, nowMs: number, t: Translate): Words {
  const base = { episode: transition.episode, since: new Date(transition.sinceMs).toISOString() };
  if (transition.state === 'firing') return { summary: observation.firing.summary, details: { ...observation.firing.details, ...base } };
  return {
    summary: t('notify.resolvedAfter', { summary: observation.resolved.summary, duration: durationText(nowMs - transition.sinceMs) }),
    details: { ...observation.resolved.details, ...base, lastedSec: Math.round((nowMs - transition.sinceMs) / 1000) },
  };
}

export function durationText(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  return `${(minutes / 60).toFixed(1)} h`;
}
