#!/usr/bin/env node
/**
 * The `carrier-sync` binary: parse argv, run one command, turn the result into an exit code.
 * 0 success · 1 the command ran and found a problem (an invalid file, a failed check) · 2 bad
 * flags or configuration (one line on stderr saying what is wrong). Only this file calls
 * process.exit.
 */
import { CommanderError } from 'commander';
import { isSyncError } from './errors.js';
import { buildProgram, UsageError } from './cli/program.js';

async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError || (isSyncError(error) && error.code === 'CONFIG_INVALID')) {
      process.stderr.write(`carrier-sync: ${(error as Error).message}\n`);
      return 2;
    }
    process.stderr.write(`carrier-sync: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`carrier-sync: ${String(error)}\n`);
    process.exit(1);
  },
);
