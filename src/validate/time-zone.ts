/**
 * A wall-clock time in an IANA zone → the instant, through Intl's tz database (no dependency of
 * our own): the zone's offset at an instant is what Intl writes for that instant, read back.
 *
 * Daylight saving: a wall-clock time is read with the offset(s) in force the day before and the
 * day after it, and each candidate instant is kept only if it reads back as that same wall-clock
 * time. Two candidates (the hour repeated when clocks go back) → the earlier, as Temporal's
 * `compatible` does; none (the hour skipped when clocks go forward) → null: that time never
 * happened there, and guessing would move the event by an hour.
 */

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** Whether Intl knows `zone` (`America/Sao_Paulo`, `UTC`, …). */
export function isTimeZone(zone: string): boolean {
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `epochMs`, in milliseconds (east positive). */
export function zoneOffsetMs(zone: string, epochMs: number): number {
  const whole = Math.floor(epochMs / 1000) * 1000;
  const parts: Record<string, string> = {};
  for (const part of formatterOf(zone).formatToParts(new Date(whole))) parts[part.type] = part.value;
  const year = parts['era'] === 'BC' ? 1 - Number(parts['year']) : Number(parts['year']);
  const wall = new Date(0);
  wall.setUTCFullYear(year, Number(parts['month']) - 1, Number(parts['day']));
  wall.setUTCHours(Number(parts['hour']), Number(parts['minute']), Number(parts['second']), 0);
  return wall.getTime() - whole;
}

/** The instant at which the zone's clocks read `wallMs` (a wall-clock time written as if UTC); null in a gap. */
export function instantOfWallTime(zone: string, wallMs: number): number | null {
  const offsets = new Set([zoneOffsetMs(zone, wallMs - DAY_MS), zoneOffsetMs(zone, wallMs), zoneOffsetMs(zone, wallMs + DAY_MS)]);
  const instants = [...offsets].map((offset) => wallMs - offset).filter((instant) => instant + zoneOffsetMs(zone, instant) === wallMs);
  return instants.length === 0 ? null : Math.min(...instants);
}
