/**
 * `--help` in the reader's language (issue 45): every command's, option's and argument's description
 * comes from the catalogs (key `help.<command path>`, `….option.<long flag>`, `….argument.<name>`),
 * and commander's own words (headings, `[options]`, `(default: …)`, the help and version options,
 * the help command) are replaced under pt-BR. The language is the config's rule, read before the
 * config is (so `--help` works with an invalid config): CARRIER_SYNC_LANG, else a pt_BR locale.
 * The catalog's text replaces the one a command file gives in English (kept there for reading): change both.
 */
import { Help, type Argument, type Command, type Option } from 'commander';
import type { Lang } from '../i18n/langs.js';
import { isMessageKey, say, type MessageValues } from '../i18n/translate.js';

const PT_TITLES: Readonly<Record<string, string>> = {
  'Usage:': 'Uso:',
  'Options:': 'Opções:',
  'Commands:': 'Comandos:',
  'Arguments:': 'Argumentos:',
  'Global Options:': 'Opções globais:',
};

function ptTerms(text: string): string {
  return text.replace(/\[options\]/g, '[opções]').replace(/\[command\]/g, '[comando]');
}

/** commander's Help with its own words in Portuguese. */
class PtBrHelp extends Help {
  override styleTitle(str: string): string {
    return super.styleTitle(PT_TITLES[str] ?? str);
  }
  override commandUsage(cmd: Command): string {
    return ptTerms(super.commandUsage(cmd));
  }
  override subcommandTerm(cmd: Command): string {
    return ptTerms(super.subcommandTerm(cmd));
  }
  override optionDescription(option: Option): string {
    return super.optionDescription(option).replace(/\(default: /, '(padrão: ');
  }
  override argumentDescription(argument: Argument): string {
    return super.argumentDescription(argument).replace(/\(default: /, '(padrão: ');
  }
}

function described(lang: Lang, key: string, values: MessageValues): string | null {
  return isMessageKey(key) ? say(lang, key, values) : null;
}

/** Sets every description in the tree from the catalog, once the commands are registered. */
export function localizeHelp(command: Command, lang: Lang, values: MessageValues, path = 'help.program'): void {
  const text = described(lang, path, values);
  if (text !== null) command.description(text);
  if (lang === 'pt-BR') command.createHelp = () => Object.assign(new PtBrHelp(), command.configureHelp());
  command.helpOption('-h, --help', say(lang, 'help.helpOption'));
  if (command.commands.length > 0) command.helpCommand('help [command]', say(lang, 'help.helpCommand'));
  for (const option of command.options) {
    const name = option.long ?? option.short ?? '';
    const optionText = described(lang, `${path}.option.${name.replace(/^-+/, '')}`, values);
    if (optionText !== null) option.description = optionText;
  }
  for (const argument of command.registeredArguments) {
    const argumentText = described(lang, `${path}.argument.${argument.name()}`, values);
    if (argumentText !== null) argument.description = argumentText;
  }
  for (const sub of command.commands) localizeHelp(sub, lang, values, path === 'help.program' ? `help.${sub.name()}` : `${path}.${sub.name()}`);
}
