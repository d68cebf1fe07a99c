/**
 * commander's own error lines under pt-BR (cli/commander-errors.ts), on a real commander tree: the
 * forms no carrier-sync command reaches today (several suggestions, a value outside the choices)
 * read in Portuguese too, and English is commander's text untouched.
 */
import { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { localizeCommanderErrors } from '../../src/cli/commander-errors.js';
import type { Lang } from '../../src/i18n/langs.js';
import { englishWordsIn } from '../support/english-words.js';

/** What `args` makes commander write on stderr, and the exit code it asks for. */
function errorOf(lang: Lang, args: string[]): { text: string; exitCode: number } {
  let text = '';
  const program = new Command('tool').exitOverride().configureOutput({ writeErr: (chunk) => (text += chunk), writeOut: () => {} });
  program.command('stats').action(() => {});
  program.command('state').action(() => {});
  program
    .command('send')
    .argument('<file>')
    .addOption(new Option('--kind <kind>').choices(['labels', 'cte', 'events']))
    .option('--verbose')
    .option('--verify')
    .action(() => {});
  program.commands.forEach((command) => command.exitOverride());
  localizeCommanderErrors(program, lang);
  try {
    program.parse(args, { from: 'user' });
  } catch (error) {
    return { text: text.trim(), exitCode: (error as { exitCode: number }).exitCode };
  }
  throw new Error('no error');
}

describe("commander's error lines", () => {
  it.each([
    [
      ['stat'],
      'error: comando desconhecido `stat`\n(Você quis dizer um destes: `state`, `stats`?)',
      "error: unknown command 'stat'\n(Did you mean one of state, stats?)",
    ],
    [
      ['send', 'a.pdf', '--kind', 'nfe'],
      'error: o valor “nfe” da opção `--kind <kind>` não é válido. Os valores aceitos são `labels`, `cte`, `events`.',
      "error: option '--kind <kind>' argument 'nfe' is invalid. Allowed choices are labels, cte, events.",
    ],
    [
      ['send', 'a.pdf', '--verif'],
      'error: opção desconhecida `--verif`\n(Você quis dizer `--verify`?)',
      "error: unknown option '--verif'\n(Did you mean --verify?)",
    ],
    [
      ['send', 'a.pdf', 'b.pdf'],
      'error: argumentos demais para `send`: é esperado 1 argumento, mas vieram 2',
      "error: too many arguments for 'send'. Expected 1 argument but got 2.",
    ],
  ])('%j', (args, portuguese, english) => {
    const pt = errorOf('pt-BR', args);
    const en = errorOf('en', args);
    expect(pt.text).toBe(portuguese);
    expect(englishWordsIn(pt.text.replace(/^error: /, ''))).toEqual([]);
    expect(en.text).toBe(english);
    expect(pt.exitCode).toBe(en.exitCode);
  });
});
