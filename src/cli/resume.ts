import type { Command } from 'commander';
import { print, withContext } from './shared.js';

export function registerResume(program: Command): void {
  program
    .command('resume')
    .description('clear a 401 pause (after fixing the API key) and resume every queue')
    .action(async (_options: unknown, command: Command) => {
      const failure = await withContext(command, async (ctx) => {
        const was = await ctx.authGate.failure();
        await ctx.authGate.clear();
        return was;
      });
      print(failure === null ? 'queues resumed (no 401 pause was recorded)' : `queues resumed (were paused by a 401 at ${failure.at})`);
    });
}
