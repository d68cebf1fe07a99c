import { SyncError } from '../errors.js';
import { refusal } from '../i18n/reason.js';
import type { MessageKey } from '../i18n/translate.js';
import { instantOfWallTime } from './time-zone.js';

/**
 * event_at normalisation. The API drops a collecting event whose event_at equals an earlier one, and
 * we dedup on the same rule across restarts, so one instant must always give one key:
 * `instantKey` is the UTC instant with the fraction trimmed of trailing zeros (up to 9 digits), so
 * 12:00:00.500-03:00 and 15:00:00.5Z give the same key.
 *
 * Decision: a time without an offset is refused unless the operator names the warehouse's zone
 * (spool.eventsTimeZone, CARRIER_SYNC_EVENTS_TIME_ZONE): the spool is fed by other systems whose
 * timezone we cannot know, and a wrong guess moves the event by hours. With a zone, such a time is
 * read in it (time-zone.ts, daylight saving included): ISO 8601 without an offset (`T` or a space
 * between date and time) and a Brazilian spreadsheet's `dd/mm/aaaa HH:mm[:ss]`.
 */

export interface EventInstant {
  /** Canonical UTC instant, fraction trimmed: `2026-03-01T12:00:00Z`, `2026-03-01T12:00:00.5Z`. */
  instantKey: string;
  /** Milliseconds since the epoch; digits past the millisecond are truncated. */
  epochMs: number;
  /** What is sent as event_at: `YYYY-MM-DDTHH:MM:SS.sssZ`, or the full-precision UTC form. */
  wire: string;
}

export interface EventAtOptions {
  /** IANA zone for a time written without an offset; null (the default): such a time is refused. */
  timeZone?: string | null;
}

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})([Tt ])(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$/;
/** A Brazilian spreadsheet's date and time: dd/mm/aaaa HH:mm[:ss], never with an offset. */
const DAY_FIRST = /^(\d{1,2})\/(\d{1,2})\/(\d{4})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?$/;

const MAX_OFFSET_MINUTES = 18 * 60;

/** What a timestamp says, before it becomes an instant. */
interface Written {
  yearText: string;
  monthText: string;
  dayText: string;
  hourText: string;
  minuteText: string;
  secondText: string | undefined;
  fraction: string | undefined;
  /** Minutes east of UTC, or null when the text has no offset. */
  offsetMinutes: number | null;
}

export function parseEventAt(text: string, options: EventAtOptions = {}): EventInstant | SyncError {
  const written = readWritten(text);
  if (written instanceof SyncError) return written;
  const { yearText, monthText, dayText, hourText, minuteText, secondText, fraction, offsetMinutes } = written;
  const year = Number(yearText);
  const month = Number(monthText);
  const day = Number(dayText);
  const hour = Number(hourText);
  const minute = Number(minuteText);
  const second = Number(secondText ?? '0');
  if (month < 1 || month > 12) return bad(text, 'reason.event.month', { month: monthText });
  if (day < 1 || day > daysInMonth(year, month)) return bad(text, 'reason.event.day', { day: dayText, month: monthText, year: yearText });
  if (hour > 23) return bad(text, 'reason.event.hour', { hour: hourText });
  if (minute > 59) return bad(text, 'reason.event.minute', { minute: minuteText });
  if (second > 59) return bad(text, 'reason.event.second', { second: secondText ?? '' });
  const digits = (fraction ?? '').padEnd(9, '0');
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(digits.slice(0, 3)));
  let epochMs: number;
  if (offsetMinutes !== null) epochMs = date.getTime() - offsetMinutes * 60_000;
  else {
    const zone = options.timeZone ?? null;
    if (zone === null) return bad(text, 'reason.event.noOffset');
    const instant = instantOfWallTime(zone, date.getTime());
    if (instant === null) return bad(text, 'reason.event.skippedTime', { zone });
    epochMs = instant;
  }
  const utc = new Date(epochMs);
  const utcYear = utc.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return bad(text, 'reason.event.years');
  const seconds = utc.toISOString().slice(0, 19);
  const trimmed = digits.replace(/0+$/, '');
  const instantKey = `${seconds}${trimmed === '' ? '' : `.${trimmed}`}Z`;
  const wire = trimmed.length <= 3 ? `${seconds}.${digits.slice(0, 3)}Z` : instantKey;
  return { instantKey, epochMs, wire };
}

function readWritten(text: string): Written | SyncError {
  const iso = PATTERN.exec(text);
  if (iso !== null) {
    const [, yearText = '', monthText = '', dayText = '', separator, hourText = '', minuteText = '', secondText, fraction, zulu, sign, offH, offM] = iso;
    if (zulu === undefined && sign === undefined) return { yearText, monthText, dayText, hourText, minuteText, secondText, fraction, offsetMinutes: null };
    // A space between date and time is a spreadsheet's local time; with an offset it is neither that nor ISO 8601.
    if (separator === ' ') return bad(text, 'reason.event.notIso');
    let offsetMinutes = 0;
    if (sign !== undefined) {
      const offsetHours = Number(offH);
      const offsetMins = Number(offM);
      if (offsetMins > 59 || offsetHours * 60 + offsetMins > MAX_OFFSET_MINUTES) {
        return bad(text, 'reason.event.offset', { offset: `${sign}${offH ?? ''}:${offM ?? ''}` });
      }
      offsetMinutes = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
    }
    return { yearText, monthText, dayText, hourText, minuteText, secondText, fraction, offsetMinutes };
  }
  const dayFirst = DAY_FIRST.exec(text);
  if (dayFirst === null) return bad(text, 'reason.event.notIso');
  const [, dayText = '', monthText = '', yearText = '', hourText = '', minuteText = '', secondText] = dayFirst;
  return { yearText, monthText, dayText, hourText, minuteText, secondText, fraction: undefined, offsetMinutes: null };
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

function bad(text: string, key: MessageKey, values: Record<string, string> = {}): SyncError {
  const shown = text.length > 60 ? `${text.slice(0, 60)}…` : text;
  return refusal('EVENT_BAD_TIME', { key, values: { ...values, value: JSON.stringify(shown) } }, { params: { eventAt: shown } });
}
