/**
 * The language of what a command says before the settings are read (`--help`, a usage error, the
 * refusal of settings that do not load): one rule, the settings' own read early. Before, `config
 * check` refusing settings had a twin of it that read a pt_BR locale under an unknown
 * CARRIER_SYNC_LANG, where `--help` read English.
 */
import { describe, expect, it } from 'vitest';
import { cliLang } from '../../src/i18n/langs.js';

describe('cliLang', () => {
  it.each([
    [{}, 'en'],
    [{ LANG: 'pt_BR.UTF-8' }, 'pt-BR'],
    [{ LC_ALL: 'C', LANG: 'pt_BR.UTF-8' }, 'en'],
    [{ LC_MESSAGES: 'pt_BR', LANG: 'en_US.UTF-8' }, 'pt-BR'],
    [{ CARRIER_SYNC_LANG: 'pt_BR', LANG: 'en_US.UTF-8' }, 'pt-BR'],
    [{ CARRIER_SYNC_LANG: 'en', LANG: 'pt_BR.UTF-8' }, 'en'],
    // A language there is no catalog for was still a choice, and not Portuguese: English.
    [{ CARRIER_SYNC_LANG: 'fr', LANG: 'pt_BR.UTF-8' }, 'en'],
    [{ CARRIER_SYNC_LANG: '', LANG: 'pt_BR.UTF-8' }, 'pt-BR'],
  ] as const)('%o reads %s', (env, lang) => {
    expect(cliLang(env)).toBe(lang);
  });
});
