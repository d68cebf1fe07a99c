/**
 * commander's own error lines (an unknown option or command, a missing argument, too many
 * arguments, a value outside the choices) in the reader's language (issue 45 item 8). commander
 * builds them as English text and hands them to `Command.error`; under pt-BR each command's `error`
 * words them again from the catalog before commander prints them and exits with its own code.
 * The texts are commander 14's; one it words differently (a newer commander) is printed as it came.
 */
import type { Command } from 'commander';
import type { Lang } from '../i18n/langs.js';
import { say, type MessageKey, type MessageValues } from '../i18n/translate.js';

/** Every command of the tree words commander's errors in `lang` (English: left as they are). */
export function localizeCommanderErrors(command: Command, lang: Lang): void {
  if (lang !== 'en') {
    const english = command.error.bind(command);
    command.error = (message, options) => english(commanderErrorText(lang, message, options?.code), options);
  }
  for (const sub of command.commands) localizeCommanderErrors(sub, lang);
}

/** The line commander prints after `carrier-sync: `, with the pointer to `--help`. */
export function usageLine(lang: Lang, text: string): string {
  return say(lang, 'cli.usage.line', { text });
}

/** Flags and names in backticks: what a person types, set apart from the Portuguese around it. */
const quoted = (name: string): string => `\`${name}\``;

/** commander's "(Did you mean …?)" after an unknown option or command. */
function suggestion(lang: Lang, tail: string | undefined): string {
  if (tail === undefined || tail === '') return '';
  const several = /^\n\(Did you mean one of (.+)\?\)$/s.exec(tail);
  if (several !== null) return `\n${say(lang, 'cli.usage.didYouMeanOneOf', { names: several[1]!.split(', ').map(quoted).join(', ') })}`;
  const one = /^\n\(Did you mean (.+)\?\)$/s.exec(tail);
  return one === null ? tail : `\n${say(lang, 'cli.usage.didYouMean', { names: quoted(one[1]!) })}`;
}

/** commander's detail after an invalid value: its list of choices, else the parser's own words. */
function detail(lang: Lang, text: string): string {
  const choices = /^Allowed choices are (.+)\.$/.exec(text);
  return choices === null ? text : say(lang, 'cli.usage.choices', { choices: choices[1]!.split(', ').map(quoted).join(', ') });
}

type Rule = readonly [code: string, pattern: RegExp, word: (lang: Lang, match: RegExpExecArray) => string];

const as =
  (key: MessageKey, values: (match: RegExpExecArray) => MessageValues) =>
  (lang: Lang, match: RegExpExecArray): string =>
    say(lang, key, values(match));

const RULES: readonly Rule[] = [
  [
    'commander.unknownOption',
    /^error: unknown option '(.+?)'(\n.*)?$/s,
    (lang, m) => say(lang, 'cli.usage.unknownOption', { flag: m[1]! }) + suggestion(lang, m[2]),
  ],
  [
    'commander.unknownCommand',
    /^error: unknown command '(.+?)'(\n.*)?$/s,
    (lang, m) => say(lang, 'cli.usage.unknownCommand', { command: m[1]! }) + suggestion(lang, m[2]),
  ],
  ['commander.missingArgument', /^error: missing required argument '(.+)'$/, as('cli.usage.missingArgument', (m) => ({ name: m[1]! }))],
  ['commander.optionMissingArgument', /^error: option '(.+)' argument missing$/, as('cli.usage.optionMissingArgument', (m) => ({ flags: m[1]! }))],
  ['commander.missingMandatoryOptionValue', /^error: required option '(.+)' not specified$/, as('cli.usage.missingMandatoryOption', (m) => ({ flags: m[1]! }))],
  [
    'commander.excessArguments',
    /^error: too many arguments(?: for '(.+)')?\. Expected (\d+) arguments? but got (\d+)\.$/,
    (lang, m) =>
      m[1] === undefined
        ? say(lang, 'cli.usage.excessArguments', { expected: Number(m[2]), got: Number(m[3]) })
        : say(lang, 'cli.usage.excessArgumentsFor', { command: m[1], expected: Number(m[2]), got: Number(m[3]) }),
  ],
  [
    'commander.invalidArgument',
    /^error: option '(.+)' argument '(.*)' is invalid\. (.*)$/s,
    (lang, m) => say(lang, 'cli.usage.invalidOptionValue', { flags: m[1]!, value: m[2]!, detail: detail(lang, m[3]!) }),
  ],
  [
    'commander.invalidArgument',
    /^error: command-argument value '(.*)' is invalid for argument '(.+)'\. (.*)$/s,
    (lang, m) => say(lang, 'cli.usage.invalidArgumentValue', { value: m[1]!, name: m[2]!, detail: detail(lang, m[3]!) }),
  ],
];

/** `message` as commander wrote it (`error: …`), worded in `lang`; the `error: ` prefix stays for the output hook. */
export function commanderErrorText(lang: Lang, message: string, code: string | undefined): string {
  if (lang === 'en') return message;
  for (const [ruleCode, pattern, word] of RULES) {
    if (ruleCode !== code) continue;
    const match = pattern.exec(message);
    if (match !== null) return `error: ${word(lang, match)}`;
  }
  return message;
}
