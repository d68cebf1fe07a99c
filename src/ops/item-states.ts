/**
 * What the history page opens with: each item of a delivery (a label or CT-e file, a collecting
 * event) and where it stands now, read from its journey's last decisive step. A dead letter gets
 * its job id, found among the failed jobs of the delivery (their ids start `<kind>.<delivery id>.`:
 * one ZSCAN of the failed set with that pattern), so the page can offer its replay.
 */
import type { Job } from 'bullmq';
import type { JourneyStep } from '../journey/journey-read.js';
import type { QueueSet } from '../queue/queues.js';
import { ITEM_KINDS, type ItemKind } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';

export type ItemStateName = 'accepted' | 'waiting' | 'dead-lettered' | 'refused' | 'superseded' | 'duplicate';

export interface ItemState {
  kind: string;
  /** The file name, or `event_at …` for an event. */
  item: string;
  state: ItemStateName;
  /** When the state was reached (the step's time). */
  at: string;
  /** A dead letter's job id, for its replay; null when it was not found among the failed jobs. */
  deadLetterId: string | null;
}

/** The step that decides an item's state; the steps not named here (attempts, moves) leave it as it was. */
const DECIDES: Readonly<Record<string, ItemStateName>> = {
  seen: 'waiting',
  received: 'waiting',
  queued: 'waiting',
  replayed: 'waiting',
  accepted: 'accepted',
  'already-accepted': 'accepted',
  'dead-lettered': 'dead-lettered',
  refused: 'refused',
  superseded: 'superseded',
  duplicate: 'duplicate',
};

function itemOf(step: JourneyStep): string {
  return step.kind === 'collecting' ? `event_at ${step.event_at ?? '?'}` : (step.file ?? '?');
}

/** Each item's state, in the order the items first appear. */
export function itemStates(steps: readonly JourneyStep[]): ItemState[] {
  const states = new Map<string, ItemState>();
  for (const step of steps) {
    const decided = DECIDES[step.step];
    if (decided === undefined || step.kind === 'webhook') continue;
    const item = itemOf(step);
    const key = `${step.kind}\n${item}`;
    const previous = states.get(key);
    // The API's own "already accepted" answer for an event arrives as a duplicate step after acceptance: it stays accepted.
    if (previous?.state === 'accepted' && decided === 'duplicate') continue;
    states.set(key, { kind: step.kind, item, state: decided, at: step.at, deadLetterId: null });
  }
  return [...states.values()];
}

/** The dead letters of one delivery: job id → its item (`file` or `event_at …`), per kind. */
export async function deadLettersOf(redis: RedisConnection, queues: QueueSet, deliveryId: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const pattern = (kind: ItemKind): string => `${kind}.${deliveryId.replace(/[*?[\]\\]/g, '\\$&')}.*`;
  for (const kind of ITEM_KINDS) {
    const queue = queues.items[kind];
    let cursor = '0';
    do {
      const [next, members] = (await redis.zscan(queue.keys.failed ?? queue.toKey('failed'), cursor, 'MATCH', pattern(kind), 'COUNT', 1000)) as [
        string,
        string[],
      ];
      cursor = next;
      for (let i = 0; i < members.length; i += 2) {
        const job = (await queue.getJob(members[i]!)) as Job<{ eventAt?: string; origin?: { fileName?: string } }> | undefined;
        if (job === undefined) continue;
        found.set(job.id!, kind === 'collecting' ? `event_at ${job.data.eventAt ?? '?'}` : (job.data.origin?.fileName ?? '?'));
      }
    } while (cursor !== '0');
  }
  return found;
}

/** The states with each dead letter's job id filled in where one matches its item. */
export function withDeadLetterIds(states: readonly ItemState[], deadLetters: ReadonlyMap<string, string>): ItemState[] {
  return states.map((state) => {
    if (state.state !== 'dead-lettered') return state;
    const id = [...deadLetters].find(([jobId, item]) => jobId.startsWith(`${state.kind}.`) && item === state.item)?.[0];
    return { ...state, deadLetterId: id ?? null };
  });
}
