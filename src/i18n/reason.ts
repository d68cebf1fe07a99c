/**
 * Reasons: why a file or item was refused, in the reader's language. A validator makes its error
 * with `refusal(code, key, values)`: the error's `message` is the English text (logs, `message` in
 * `.error.json`, unchanged for scripts), and it keeps the key and values so that any reader renders
 * the reason in its own language later. What was stored as English text only (a dead letter's API
 * answer, an item of an earlier version) is rendered from its code, status and the API's own code
 * and message: never by translating English text.
 */
import { SyncError, type ErrorCode, type SyncErrorOptions } from '../errors.js';
import { isMessageKey, say, type Lang, type MessageKey, type MessageValue } from './translate.js';

/** A reason's key and values, as kept in errors, reports and Redis. A value may be a list of reasons (a CT-e's field problems). */
export interface Reason {
  key: MessageKey;
  values: Readonly<Record<string, MessageValue | readonly Reason[]>>;
}

export function reasonOf(key: MessageKey, values: Reason['values'] = {}): Reason {
  return { key, values };
}

/** A SyncError whose message is the English reason, carrying the reason for other languages. */
export function refusal(code: ErrorCode, reason: Reason, options: SyncErrorOptions = {}): SyncError {
  return new SyncError(code, renderReason('en', reason), { ...options, reason });
}

export function renderReason(lang: Lang, reason: Reason): string {
  const values: Record<string, MessageValue> = {};
  for (const [name, value] of Object.entries(reason.values)) {
    values[name] = typeof value === 'string' || typeof value === 'number' ? value : value.map((r) => renderReason(lang, r)).join('; ');
  }
  return say(lang, reason.key, values);
}

/** A reason read back from JSON (Redis, a report): null unless it is one this version knows. */
export function asReason(value: unknown): Reason | null {
  if (value === null || typeof value !== 'object') return null;
  const { key, values } = value as { key?: unknown; values?: unknown };
  if (typeof key !== 'string' || !isMessageKey(key) || values === null || typeof values !== 'object' || Array.isArray(values)) return null;
  for (const v of Object.values(values as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'number') continue;
    if (!Array.isArray(v) || v.some((r) => asReason(r) === null)) return null;
  }
  return { key, values: values as Reason['values'] };
}

/** What is known of a failure wherever it was read from: our code and English message, the reason when kept, the API's answer. */
export interface FailureFacts {
  code: string;
  message: string;
  reason?: unknown;
  status?: number | null;
  apiCode?: string | null;
  apiMessage?: string | null;
}

/** The text a person reads for a failure, in `lang`. English without a kept reason is the message itself, as before. */
export function describeFailure(lang: Lang, facts: FailureFacts): string {
  const reason = asReason(facts.reason);
  if (reason !== null) return renderReason(lang, reason);
  if (lang === 'en' && facts.apiMessage == null) return facts.message;
  const codeKey = `code.${facts.code}`;
  const meaning = say(lang, isMessageKey(codeKey) ? codeKey : 'code.UNKNOWN');
  if (facts.apiMessage != null && typeof facts.status === 'number') {
    return facts.apiCode == null
      ? say(lang, 'reason.apiNoCode', { meaning, status: String(facts.status), apiMessage: facts.apiMessage })
      : say(lang, 'reason.api', { meaning, status: String(facts.status), apiCode: facts.apiCode, apiMessage: facts.apiMessage });
  }
  return facts.message === '' ? meaning : say(lang, 'reason.withDetail', { meaning, detail: facts.message });
}
