import type { Command } from 'commander';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('offline check of label PDFs, CT-e XMLs and events files; prints each verdict; exit 1 if any is invalid')
    .argument('<file...>', 'files to check (.pdf, .xml, .ndjson, .jsonl, .csv)')
    .option('--json', 'print JSON')
    .action(async (files: string[], options: { json?: boolean }, command: Command) => {
      const { loadConfig } = await import('../config/load.js');
      const config = loadConfig({ env: process.env, configPath: command.optsWithGlobals<{ config?: string }>().config });
      const { printVerdicts } = await import('./validate-verdicts.js');
      await printVerdicts(files, config, options.json === true);
    });
}
