/** The languages a person can read carrier-sync in (CARRIER_SYNC_LANG); English is the default. No imports, so config/ can name them. */
export const LANGS = ['en', 'pt-BR'] as const;
export type Lang = (typeof LANGS)[number];

export function isLang(value: string): value is Lang {
  return (LANGS as readonly string[]).includes(value);
}
