import type { SyncError } from '../errors.js';

/**
 * What every validator returns: the checked value with non-fatal remarks, or the one error that
 * makes the input unusable. Validators never throw; a caller branches on `ok`, then on `error.code`.
 */
export type Verdict<T> = { ok: true; value: T; warnings: string[] } | { ok: false; error: SyncError };

export function accept<T>(value: T, warnings: string[] = []): Verdict<T> {
  return { ok: true, value, warnings };
}

export function reject<T>(error: SyncError): Verdict<T> {
  return { ok: false, error };
}
