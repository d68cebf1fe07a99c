import type { Command } from 'commander';
import { localTime } from '../i18n/local-time.js';
import { translator } from '../i18n/translate.js';
import { configOf, print, withContext } from './shared.js';

/** How long `resume` waits for the probe's answer before leaving it to the daemon. */
const PROBE_WAIT_MS = 15_000;

type Outcome = { kind: 'none' } | { kind: 'accepted' | 'refused' | 'noAnswer' | 'waiting'; at: string };

/**
 * `carrier-sync resume` after a 401 pause: the next item tests the key now (the push gate's probe,
 * backoff or not), with the key the daemon's files hold now, and the command says what the API
 * answered: accepted (queues resumed), still refused (exit 1: fix the key), no answer about the key,
 * or no item went within 15 s (no daemon running, nothing waiting). It never claims a resume that
 * the next 401 would undo. With no pause recorded, it resumes every queue (a pause by hand).
 */
export function registerResume(program: Command): void {
  program
    .command('resume')
    .description('after a 401 pause: test the key now with the next item, and say whether the API accepts it')
    .action(async (_options: unknown, command: Command) => {
      const t = translator((await configOf(command)).lang);
      const outcome = await withContext(command, async (ctx): Promise<Outcome> => {
        const was = await ctx.authGate.failure();
        if (was === null) {
          await ctx.authGate.clear();
          return { kind: 'none' };
        }
        await ctx.authGate.openProbe();
        const deadline = Date.now() + PROBE_WAIT_MS;
        while (Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          const now = await ctx.authGate.failure();
          if (now === null) return { kind: 'accepted', at: was.at };
          if (await ctx.authGate.isProbing()) continue;
          return { kind: (now.probes ?? 0) > (was.probes ?? 0) ? 'refused' : 'noAnswer', at: was.at };
        }
        return { kind: 'waiting', at: was.at };
      });
      switch (outcome.kind) {
        case 'none':
          print(t('cli.resume.none'));
          return;
        case 'accepted':
          print(t('cli.resume.accepted', { at: localTime(outcome.at) }));
          return;
        case 'refused':
          print(t('cli.resume.refused'));
          process.exitCode = 1;
          return;
        case 'noAnswer':
          print(t('cli.resume.noAnswer'));
          return;
        case 'waiting':
          print(t('cli.resume.waiting', { seconds: PROBE_WAIT_MS / 1000 }));
          return;
      }
    });
}
