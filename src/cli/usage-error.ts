/**
 * A flag or argument that makes no sense: `main.ts` turns it into one line and exit 2. Its message
 * is the English line; `wording` gives the line in the reader's language (issue 45).
 */
import type { Lang } from '../i18n/langs.js';
import { say, type MessageKey, type MessageValues } from '../i18n/translate.js';

export class UsageError extends Error {
  constructor(
    message: string,
    readonly wording?: (lang: Lang) => string,
  ) {
    super(message);
  }
}

/** A usage error worded from the catalog (`cli.usage.*`): its message is the English text. */
export function usageError(key: MessageKey, values: MessageValues = {}): UsageError {
  return new UsageError(say('en', key, values), (lang) => say(lang, key, values));
}

/** The line main.ts prints for `error` under `lang`: English is the message as it was. */
export function usageErrorText(lang: Lang, error: UsageError): string {
  return lang === 'en' || error.wording === undefined ? error.message : error.wording(lang);
}
