import type { Command } from 'commander';
import { localTime } from '../i18n/local-time.js';
import { translator } from '../i18n/translate.js';
import { print, withContext } from './shared.js';

export function registerResume(program: Command): void {
  program
    .command('resume')
    .description('clear a 401 pause (after fixing the API key) and resume every queue')
    .action(async (_options: unknown, command: Command) => {
      const { failure, lang } = await withContext(command, async (ctx) => {
        const was = await ctx.authGate.failure();
        await ctx.authGate.clear();
        return { failure: was, lang: ctx.config.lang };
      });
      const t = translator(lang);
      // Local time with its offset, as every time a person reads (the JSON of status keeps UTC).
      print(failure === null ? t('cli.resume.noPause') : t('cli.resume.wasPaused', { at: localTime(failure.at) }));
    });
}
