/**
 * Times a person reads, in the reader's local time with its UTC offset: `2026-11-25 05:46:59 -03:00`
 * (the process's time zone, from TZ or the system). The same instant as the ISO string it came from,
 * without a guess: the offset is written out. JSON and logs keep UTC ISO; only text output uses this.
 */

/** `iso` (or epoch ms) as local `YYYY-MM-DD HH:MM:SS[.mmm] ±HH:MM`; what is not a time is returned as it came. */
export function localTime(at: string | number, options: { ms?: boolean } = {}): string {
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  const two = (n: number): string => String(n).padStart(2, '0');
  const day = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
  const ms = options.ms === true ? `.${String(date.getMilliseconds()).padStart(3, '0')}` : '';
  const time = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}${ms}`;
  return `${day} ${time} ${offsetOf(date)}`;
}

/** The local offset at that instant, `+00:00`, `-03:00`, `+05:30`. */
function offsetOf(date: Date): string {
  const minutes = -date.getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** A long internal number cut for reading (`017957094309698…`); the whole value stays in --json and on hover. */
export function shortened(value: string, keep = 12): string {
  return value.length <= keep + 1 ? value : `${value.slice(0, keep)}…`;
}
