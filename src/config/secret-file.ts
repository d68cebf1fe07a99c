/**
 * A secret that follows its file: given as `<VAR>_FILE` (a Kubernetes Secret mounted as a file),
 * its value is read again when the file changes, without a restart. The file is read at most once
 * a second, on use (`current()`), or at once with `refresh()` (before a 401 probe): a Secret's
 * rotation swaps the `..data` symlink, an edit rewrites the file in place, and a fresh read sees
 * both. A read that fails, or finds the file empty or holding a line break inside (a write caught
 * half-way, a file being replaced), keeps the last good value. A secret given in the variable itself
 * never changes. The value is never logged.
 */
import { readFileSync } from 'node:fs';

export interface LiveSecret {
  /** The value now (the file read again when a second has passed since the last read). */
  current(): string;
  /** Reads the file again now; returns the value. */
  refresh(): string;
}

const READ_EVERY_MS = 1000;

/** `fallback`: the value loaded at start (the config's), kept while the file cannot give a better one. */
export function liveSecret(env: Readonly<Record<string, string | undefined>>, name: string, fallback: string, now: () => number = Date.now): LiveSecret {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if ((direct !== undefined && direct !== '') || file === undefined || file === '') return { current: () => fallback, refresh: () => fallback };
  let value = fallback;
  let readAt = now();
  const refresh = (): string => {
    readAt = now();
    try {
      const read = readFileSync(file, 'utf8').trim();
      if (read !== '' && !/[\r\n\0]/.test(read)) value = read;
    } catch {
      // gone for a moment (a Secret's swap): the last good value stays
    }
    return value;
  };
  return { current: () => (now() - readAt >= READ_EVERY_MS ? refresh() : value), refresh };
}

/** A secret as a notification channel or a connection takes it: fixed (tests, `notify test`), or following its file. */
export type Secret = string | LiveSecret;

/** The value to use now for one send or one connect: a file is read again every time (they are rare; a rotation shows at once). */
export function freshValueOf(secret: Secret): string {
  return typeof secret === 'string' ? secret : secret.refresh();
}

/** The value for a log line or a label (where it sends): read again at most once a second. */
export function currentValueOf(secret: Secret): string {
  return typeof secret === 'string' ? secret : secret.current();
}
