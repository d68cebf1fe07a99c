import type { Command } from 'commander';
import { createLogger } from '../log.js';
import { usageError } from './usage-error.js';
import { configOf, print } from './shared.js';

export function registerSandbox(program: Command): void {
  program
    .command('sandbox')
    .description('run the sandbox API: a local, faithful implementation of the API contract, for trials and tests')
    .option('--port <n>', 'port to listen on (0: a free one)', '4010')
    .option('--host <addr>', 'address to bind', '127.0.0.1')
    .option('--seed <file>', 'JSON seed data (default config/sandbox-seed.json)')
    .action(async (options: { port: string; host: string; seed?: string }, command: Command) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw usageError('cli.usage.sandbox.port', { value: options.port });
      const config = await configOf(command);
      const logger = createLogger({ level: config.log.level, isPretty: process.stderr.isTTY === true });
      const { runSandbox } = await import('../sandbox/run.js');
      const handle = await runSandbox({ port, host: options.host, ...(options.seed === undefined ? {} : { seedFile: options.seed }), logger });
      print(`sandbox API listening on ${handle.url}`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
      });
      await handle.close();
    });
}
