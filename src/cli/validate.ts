import type { Command } from 'commander';
import { configOf } from './shared.js';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('offline check of label PDFs, CT-e XMLs and events files; prints each verdict; exit 1 if any is invalid')
    .argument('<file...>', 'files to check (.pdf, .xml, .ndjson, .jsonl, .csv)')
    .option('--json', 'print JSON')
    .action(async (files: string[], options: { json?: boolean }, command: Command) => {
      const config = await configOf(command);
      const { printVerdicts } = await import('./validate-verdicts.js');
      await printVerdicts(files, config, options.json === true);
    });
}
