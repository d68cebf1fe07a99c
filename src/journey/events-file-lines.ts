/**
 * An events file's invalid lines, kept for the people who look for the file (`history --file`, the
 * history page's file search): the lines have no delivery to hang a journey step on, so they are
 * kept by file name. One hash per UTC day, `<prefix>:events-file-lines:<epoch day>`: file name →
 * JSON `{ at, file, count, lines }` with the first `LINES_KEPT` lines (number, code, English message,
 * reason key). It expires with the journeys of its day (`CARRIER_SYNC_HISTORY_DAYS` after the day
 * ends). A file dropped again under the same name the same day replaces its record.
 *
 * The same hash keeps an events file's refusal after its records were sent (EVENT_FILE_CHANGED: the
 * events' own journeys say "accepted", and nothing else would tell that the file is in failed/ with
 * later lines unsent), under `/refused/<file name>` (a `/` is in no file name, so no file's record
 * is taken for another's).
 */
import type { ChainableCommander } from 'ioredis';
import type { StoredReason } from '../errors.js';
import { asReason, reasonOf, type Reason } from '../i18n/reason.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { epochDayOf } from './journey.js';

export const LINES_KEPT = 5;
const DAY_SEC = 86_400;

export interface InvalidLineRecord {
  line: number;
  code: string;
  message: string;
  reason?: StoredReason | undefined;
}

export interface InvalidLinesRecord {
  /** ISO time the file was read. */
  at: string;
  file: string;
  /** Every invalid line of the file; `lines` holds the first of them. */
  count: number;
  /** Its valid records (sent, or duplicates): 0 when nothing of the file was sent; absent in records of earlier versions. */
  valid?: number;
  lines: InvalidLineRecord[];
}

/** An events file refused after its records were sent: when, its code and reason, and its name in failed/. */
export interface EventsFileRefusal {
  /** ISO time it was refused. */
  at: string;
  file: string;
  /** Its name in failed/events/ (another when a file of its name was there already). */
  failedAs: string;
  code: string;
  /** The reason in English, for a record without `reason`. */
  message: string;
  reason?: StoredReason | undefined;
}

const REFUSED_FIELD = '/refused/';

/** Appends the record of `file`'s refusal to `chain`. */
export function recordFileRefusal(chain: ChainableCommander, keys: Keys, record: EventsFileRefusal, atMs: number, ttlSec: number): ChainableCommander {
  const day = epochDayOf(atMs);
  return chain
    .hset(keys.eventsFileLines(day), `${REFUSED_FIELD}${record.file}`, JSON.stringify(record))
    .expireat(keys.eventsFileLines(day), (day + 1) * DAY_SEC + ttlSec);
}

/** Appends the record of `file`'s invalid lines to `chain`. */
export function recordInvalidLines(chain: ChainableCommander, keys: Keys, record: InvalidLinesRecord, atMs: number, ttlSec: number): ChainableCommander {
  const day = epochDayOf(atMs);
  const kept: InvalidLinesRecord = { ...record, lines: record.lines.slice(0, LINES_KEPT) };
  return chain.hset(keys.eventsFileLines(day), record.file, JSON.stringify(kept)).expireat(keys.eventsFileLines(day), (day + 1) * DAY_SEC + ttlSec);
}

/** What events files named `file` left over the retention's days, oldest first: their invalid lines and their refusals after sending. One round trip. */
export async function readEventsFileRecords(
  redis: RedisConnection,
  keys: Keys,
  file: string,
  retentionDays: number,
  nowMs: number,
): Promise<{ invalidLines: InvalidLinesRecord[]; refusals: EventsFileRefusal[] }> {
  const today = epochDayOf(nowMs);
  const pipeline = redis.pipeline();
  for (let day = today - retentionDays; day <= today; day += 1) pipeline.hmget(keys.eventsFileLines(day), file, `${REFUSED_FIELD}${file}`);
  const replies = (await pipeline.exec()) ?? [];
  const parsed = <T>(raw: unknown): T[] => {
    if (typeof raw !== 'string') return [];
    try {
      return [JSON.parse(raw) as T];
    } catch {
      return [];
    }
  };
  const days = replies.flatMap(([error, pair]) => (error === null && Array.isArray(pair) ? [pair as unknown[]] : []));
  return {
    invalidLines: days.flatMap(([lines]) => parsed<InvalidLinesRecord>(lines)),
    refusals: days.flatMap(([, refusal]) => parsed<EventsFileRefusal>(refusal)),
  };
}

/** Lines whose reasons the overview's row names. */
const LINES_NAMED = 3;

/**
 * `2 invalid lines, not sent (the valid records were sent): line 2: …; line 5: …`, by key, for any
 * reader's language; with no valid record (`valid` 0), it says nothing of the file was sent.
 */
export function linesReason(rejects: readonly InvalidLineRecord[], valid?: number): Reason {
  const first: Reason[] = rejects.slice(0, LINES_NAMED).map((line) => lineReason(line));
  return reasonOf(valid === 0 ? 'reason.events.linesNoneValid' : 'reason.events.linesNotSent', { count: rejects.length, first });
}

/** `line 2: <its reason>`; a line kept without a reason key reads with its English message. */
export function lineReason(line: InvalidLineRecord): Reason {
  const reason = asReason(line.reason);
  return reasonOf('reason.events.atLine', { line: String(line.line), reason: reason === null ? line.message : [reason] });
}
