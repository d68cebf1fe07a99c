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

/**
 * The locale variable that asks for Portuguese (pt_BR.UTF-8, pt-BR…) when neither
 * CARRIER_SYNC_LANG nor a --config file chose a language: LC_ALL, then LC_MESSAGES, then LANG, the
 * first one set deciding (as POSIX reads them), or null. Here rather than in config/load.ts: the
 * command line's help reads it, and `--help` need not load the settings' schema (zod, yaml).
 */
export function localeLang(env: Readonly<Record<string, string | undefined>>): string | null {
  const variable = ['LC_ALL', 'LC_MESSAGES', 'LANG'].find((name) => (env[name] ?? '') !== '');
  if (variable === undefined) return null;
  return /^pt[_-]br\b/i.test(env[variable] ?? '') ? variable : null;
}

/**
 * The language of the terminal, before (or without) the settings: `--help`, a usage error, the
 * refusal of settings that do not load. The settings' own rule read early: CARRIER_SYNC_LANG (any
 * spelling langOf reads; one it cannot read is English), else LC_ALL/LC_MESSAGES/LANG pt_BR*, else English.
 */
export function cliLang(env: NodeJS.ProcessEnv): Lang {
  const chosen = env['CARRIER_SYNC_LANG'];
  if (chosen !== undefined && chosen !== '') return langOf(chosen) ?? 'en';
  return localeLang(env) === null ? 'en' : 'pt-BR';
}
