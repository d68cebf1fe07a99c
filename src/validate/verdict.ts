import type { SyncError } from '../errors.js';
import { renderReason, type Reason } from '../i18n/reason.js';

/**
 * What every validator returns: the checked value with non-fatal remarks, or the one error that
 * makes the input unusable. Validators never throw; a caller branches on `ok`, then on `error.code`.
 */
export type Verdict<T> = { ok: true; value: T; warnings: string[]; warningReasons: Reason[] } | { ok: false; error: SyncError };

/** `warnings` in English (logs), `warningReasons` for a reader in another language (`validate`). */
export function accept<T>(value: T, warnings: Reason[] = []): Verdict<T> {
  return { ok: true, value, warnings: warnings.map((w) => renderReason('en', w)), warningReasons: warnings };
}

export function reject<T>(error: SyncError): Verdict<T> {
  return { ok: false, error };
}
