/**
 * ISO 8601 instants as the sandbox reads them: extended format, date and time, seconds required,
 * any fraction up to nanoseconds, and an explicit offset (Z or ±HH:MM / ±HHMM). A local time
 * without an offset is not an instant, so it is refused.
 *
 * Instants are compared as integer nanoseconds since the epoch, so `10:00:00Z`,
 * `07:00:00.000-03:00` and `10:00:00.000000000+00:00` are the same instant.
 */

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** Nanoseconds since the epoch, or null when `text` is not an ISO 8601 instant with an offset. */
export function parseInstant(text: string): bigint | null {
  const match = ISO_INSTANT.exec(text);
  if (match === null) return null;
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, offH, offM] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (zulu === undefined) {
    const hours = Number(offH);
    const minutes = Number(offM);
    if (hours > 23 || minutes > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  // Date.UTC maps years 0-99 to 1900-1999, so set the year separately.
  const wallClock = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  wallClock.setUTCFullYear(year);
  const epochMs = wallClock.getTime() - offsetMinutes * 60_000;
  const nanos = BigInt((fraction ?? '').padEnd(9, '0'));
  return BigInt(epochMs) * 1_000_000n + nanos;
}

/** A stable text key for an instant, for sets and maps. */
export function instantKey(text: string): string | null {
  const instant = parseInstant(text);
  return instant === null ? null : instant.toString();
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
