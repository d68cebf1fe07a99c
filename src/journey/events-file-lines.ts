/**
 * An events file's invalid lines, kept for the people who look for the file (`history --file`, the
 * history page's file search): the lines have no delivery to hang a journey step on, so they are
 * kept by file name. One hash per UTC day, `<prefix>:events-file-lines:<epoch day>`: file name →
 * JSON `{ at, file, count, lines }` with the first `LINES_KEPT` lines (number, code, English message,
 * reason key). It expires with the journeys of its day (`CARRIER_SYNC_HISTORY_DAYS` after the day
 * ends). A file dropped again under the same name the same day replaces its record.
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

/** Appends the record of `file`'s invalid lines to `chain`. */
export function recordInvalidLines(chain: ChainableCommander, keys: Keys, record: InvalidLinesRecord, atMs: number, ttlSec: number): ChainableCommander {
  const day = epochDayOf(atMs);
  const kept: InvalidLinesRecord = { ...record, lines: record.lines.slice(0, LINES_KEPT) };
  return chain.hset(keys.eventsFileLines(day), record.file, JSON.stringify(kept)).expireat(keys.eventsFileLines(day), (day + 1) * DAY_SEC + ttlSec);
}

/** The records of files named `file` over the retention's days, oldest first. */
export async function readInvalidLines(redis: RedisConnection, keys: Keys, file: string, retentionDays: number, nowMs: number): Promise<InvalidLinesRecord[]> {
  const today = epochDayOf(nowMs);
  const pipeline = redis.pipeline();
  for (let day = today - retentionDays; day <= today; day += 1) pipeline.hget(keys.eventsFileLines(day), file);
  const replies = (await pipeline.exec()) ?? [];
  return replies.flatMap(([error, raw]) => {
    if (error !== null || typeof raw !== 'string') return [];
    try {
      return [JSON.parse(raw) as InvalidLinesRecord];
    } catch {
      return [];
    }
  });
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
