/** The command tree. Each command lives in its own file and only parses flags and calls stages. */
import type { CommanderError } from 'commander';
import { Command } from 'commander';
import { registerBackfill } from './backfill.js';
import { registerConfig } from './config.js';
import { registerDlq } from './dlq.js';
import { registerEnqueue } from './enqueue.js';
import { registerNotify } from './notify.js';
import { registerHistory } from './history.js';
import { registerResume } from './resume.js';
import { registerSandbox } from './sandbox.js';
import { registerStart, ROLES } from './start.js';
import { registerStatus } from './status.js';
import { registerValidate } from './validate.js';
import { registerWebhook } from './webhook.js';
import { CHANNEL_NAMES } from '../notify/channel.js';
import { appVersion } from '../version.js';
import { cliLang } from '../i18n/langs.js';
import { localizeHelp } from './help-text.js';
import { localizeCommanderErrors, usageLine } from './commander-errors.js';

export function buildProgram(lang = cliLang(process.env)): Command {
  const program = new Command('carrier-sync')
    .description('Pushes label PDFs, CT-e XMLs and driver collecting events to the Delivery Logistics API, exactly once, under its rate limit.')
    .version(appVersion(), '-V, --version', 'print the version and exit')
    .option('--config <path>', 'YAML file overriding config/default.yaml (environment variables override both)')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeErr: (text) => process.stderr.write(text.startsWith('error:') ? `carrier-sync: ${usageLine(lang, text.slice(7).trim())}\n` : text),
    });
  for (const register of [
    registerStart,
    registerStatus,
    registerDlq,
    registerEnqueue,
    registerWebhook,
    registerValidate,
    registerSandbox,
    registerBackfill,
    registerResume,
    registerNotify,
    registerHistory,
    registerConfig,
  ]) {
    register(program);
  }
  // The names a person types stay as they are; under pt-BR in backticks, set apart from the prose.
  const names = (list: readonly string[]): string => list.map((name) => (lang === 'pt-BR' ? `\`${name}\`` : name)).join(', ');
  localizeHelp(program, lang, { roles: names(ROLES), channels: names(CHANNEL_NAMES) });
  program.commands.forEach(applyExitOverride);
  localizeCommanderErrors(program, lang);
  return program;
}

function applyExitOverride(command: Command): void {
  command.exitOverride((error: CommanderError) => {
    throw error;
  });
  command.commands.forEach(applyExitOverride);
}
