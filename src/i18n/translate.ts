/**
 * The languages a person can read carrier-sync in, and the one function that turns a message key
 * and its values into text. Messages are ICU MessageFormat, formatted by intl-messageformat
 * (FormatJS): plural rules come from Intl.PluralRules, so Portuguese's `many` falls back to `other`
 * as ICU says, and numbers are written the locale's way. Compiled messages are kept per language
 * and key (a few hundred at most). Tags are off: `<infCte>` in a reason is text, not markup.
 */
import { IntlMessageFormat, type Formatters } from 'intl-messageformat';
import { EN, type MessageKey } from './catalog-en.js';
import { PT_BR } from './catalog-pt-br.js';

import type { Lang } from './langs.js';

export { LANGS, isLang, type Lang } from './langs.js';
export type { MessageKey };

export type MessageValue = string | number;
export type MessageValues = Readonly<Record<string, MessageValue>>;

/** `say` bound to one language. */
export type Translate = (key: MessageKey, values?: MessageValues) => string;

const CATALOGS: Readonly<Record<Lang, Readonly<Record<MessageKey, string>>>> = { en: EN, 'pt-BR': PT_BR };
const compiled = new Map<string, IntlMessageFormat>();

/**
 * CLDR puts 0 in Portuguese's `one` (i = 0..1), which made `0 registro válido` (issue 45); Brazilian
 * usage says `0 registros válidos`. So under pt-BR a cardinal 0 takes the `other` branch (an `=0`
 * branch, where a message has one, still wins).
 */
class PtBrPluralRules extends Intl.PluralRules {
  private readonly isCardinal: boolean;
  constructor(locales?: string | string[], options?: Intl.PluralRulesOptions) {
    super(locales, options);
    this.isCardinal = options?.type !== 'ordinal';
  }
  override select(n: number): Intl.LDMLPluralRule {
    return n === 0 && this.isCardinal ? 'other' : super.select(n);
  }
}

const memo = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();
function memoized<T extends Intl.NumberFormat | Intl.DateTimeFormat>(kind: string, args: unknown[], make: () => T): T {
  const id = `${kind}${JSON.stringify(args)}`;
  let made = memo.get(id) as T | undefined;
  if (made === undefined) {
    made = make();
    memo.set(id, made);
  }
  return made;
}

const PT_BR_FORMATTERS: Formatters = {
  getNumberFormat: (...args) => memoized('n', args, () => new Intl.NumberFormat(...args)),
  getDateTimeFormat: (...args) => memoized('d', args, () => new Intl.DateTimeFormat(...args)),
  getPluralRules: (...args) => new PtBrPluralRules(...(args as [string | string[] | undefined, Intl.PluralRulesOptions | undefined])),
};

export function isMessageKey(key: string): key is MessageKey {
  return Object.hasOwn(EN, key);
}

export function catalogOf(lang: Lang): Readonly<Record<MessageKey, string>> {
  return CATALOGS[lang];
}

/** The message `key` in `lang`, its placeholders filled from `values`. */
export function say(lang: Lang, key: MessageKey, values: MessageValues = {}): string {
  const id = `${lang}\u0000${key}`;
  let format = compiled.get(id);
  if (format === undefined) {
    format = new IntlMessageFormat(CATALOGS[lang][key], lang, undefined, { ignoreTag: true, ...(lang === 'pt-BR' ? { formatters: PT_BR_FORMATTERS } : {}) });
    compiled.set(id, format);
  }
  return String(format.format(values));
}

export function translator(lang: Lang): Translate {
  return (key, values) => say(lang, key, values);
}

/**
 * The language of a page: the browser's Accept-Language first (by its q-values; any `pt` reads
 * pt-BR, any `en` English), else `fallback` (CARRIER_SYNC_LANG).
 */
export function langOfAcceptLanguage(header: string | undefined, fallback: Lang): Lang {
  if (header === undefined || header.trim() === '') return fallback;
  const ranked = header
    .split(',')
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: tag.trim().toLowerCase(), q: q === undefined ? 1 : Number(q), index };
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { tag } of ranked) {
    if (tag === 'pt' || tag.startsWith('pt-')) return 'pt-BR';
    if (tag === 'en' || tag.startsWith('en-')) return 'en';
  }
  return fallback;
}
