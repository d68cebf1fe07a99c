/**
 * The error lines a command prints on the terminal, in the reader's language (issue 45): a
 * configuration refused (the SyncError's reason key, set by config/load.ts) and a Redis that did
 * not answer in time. Log lines stay English; these are what a person reads.
 */
import { isSyncError } from '../errors.js';
import type { Lang } from '../i18n/langs.js';
import { isMessageKey, say, type MessageValue } from '../i18n/translate.js';
import { ContactGaveUp } from '../runtime/redis-contact.js';

export function configErrorText(lang: Lang, error: Error): string {
  if (lang === 'en' || !isSyncError(error) || error.reason === undefined || !isMessageKey(error.reason.key)) return error.message;
  const values = error.reason.values as Record<string, MessageValue>;
  // config.error.invalid carries its problems in both languages (zod words them): `problems` is the reader's.
  const inLang = typeof values['problemsPtBr'] === 'string' ? { ...values, problems: values['problemsPtBr'] } : values;
  return say(lang, error.reason.key, inLang);
}

/** The Redis-unreachable line under `lang`, or null when `error` is something else. */
export function contactGaveUpText(lang: Lang, error: unknown): string | null {
  if (!(error instanceof ContactGaveUp)) return null;
  if (lang === 'en') return error.message;
  const why = error.why ?? say(lang, 'cli.redisNoAnswer');
  return say(lang, 'cli.redisUnreachable', { address: error.address, setting: error.setting, why, ms: String(error.afterMs) });
}
