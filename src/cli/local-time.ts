/**
 * A time as a person reads it in a terminal: this machine's local time (TZ) with its offset, e.g.
 * `2026-11-26 13:10:16 -03:00`, as the pages show times in the browser's (ops/local-time.ts).
 */
export function localTimeText(iso: string): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const offsetMin = -at.getTimezoneOffset();
  const local = new Date(at.getTime() + offsetMin * 60_000).toISOString();
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${local.slice(0, 10)} ${local.slice(11, 19)} ${offset}`;
}
