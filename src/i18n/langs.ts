/** The languages a person can read carrier-sync in (CARRIER_SYNC_LANG); English is the default. No imports, so config/ can name them. */
export const LANGS = ['en', 'pt-BR'] as const;
export type Lang = (typeof LANGS)[number];

export function isLang(value: string): value is Lang {
  return (LANGS as readonly string[]).includes(value);
}

/**
 * The language a person means by `text`, however they wrote it: `pt-BR`, `pt-br`, `pt_BR`,
 * `pt_BR.UTF-8` (a locale, with its encoding or `@modifier`) and `pt` are pt-BR; `en`, `en_US`… are
 * English. Anything else (`pt_PT`, `fr`) is null: we have no catalog for it.
 */
export function langOf(text: string): Lang | null {
  const tag = text
    .trim()
    .replace(/[.@].*$/, '')
    .replace(/_/g, '-')
    .toLowerCase();
  if (tag === 'pt' || tag === 'pt-br') return 'pt-BR';
  if (tag === 'en' || /^en-[a-z0-9]+$/.test(tag)) return 'en';
  return null;
}
