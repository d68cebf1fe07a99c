import type { Command } from 'commander';

export function registerConfig(program: Command): void {
  const config = program.command('config').description('the configuration as the daemon would read it');
  config
    .command('check')
    .description(
      'print the effective settings, each with its source (default, file, variable), secrets masked; name any unknown CARRIER_SYNC_* variable with the closest real one; exit 0, or 2 on an error (for CI pipelines and Helm values)',
    )
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const { checkConfig } = await import('./config-check.js');
      checkConfig(command.optsWithGlobals<{ config?: string }>().config, options.json === true);
    });
}
