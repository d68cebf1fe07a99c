#!/usr/bin/env -S MALLOC_TRIM_THRESHOLD_=1048576 node --max-semi-space-size=4 --heap-growing-percent=50 --v8-pool-size=1
/**
 * The `carrier-sync` binary: parse argv, run one command, turn the result into an exit code.
 * 0 success · 1 the command ran and found a problem (an invalid file, a failed check) · 2 bad
 * flags or configuration (one line on stderr saying what is wrong). Only this file calls
 * process.exit.
 */
import { CommanderError } from 'commander';
import { isSyncError } from './errors.js';
import { flushLogLines } from './log.js';
import { buildProgram } from './cli/program.js';
import { UsageError, usageErrorText } from './cli/usage-error.js';
import { cliLang } from './i18n/langs.js';
import { configErrorText, contactGaveUpText } from './cli/error-text.js';

async function main(argv: readonly string[]): Promise<number> {
  const lang = cliLang(process.env);
  const program = buildProgram(lang);
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    flushLogLines(); // the lines logged before this one go first
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError || (isSyncError(error) && error.code === 'CONFIG_INVALID')) {
      const text = error instanceof UsageError ? usageErrorText(lang, error) : configErrorText(lang, error as Error);
      process.stderr.write(`carrier-sync: ${text}\n`);
      return 2;
    }
    const text = contactGaveUpText(lang, error) ?? (error instanceof Error ? error.message : String(error));
    process.stderr.write(`carrier-sync: ${text}\n`);
    return 1;
  }
}

/**
 * Resolves once everything written to `stream` so far has left the process. Writes to a pipe are
 * asynchronous: a reader that reads slowly leaves megabytes queued here, and process.exit() would
 * drop them. An empty write's callback runs after every earlier write, or with the stream's error
 * (EPIPE when the reader went away: nothing more can reach it, so there is nothing to wait for).
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || stream.writableEnded) {
      resolve();
      return;
    }
    stream.write('', () => resolve());
  });
}

// A reader that closes the pipe early (`carrier-sync dlq list | head`) is not a failure of ours.
process.stdout.on('error', () => {});
// Nor a closed terminal (EIO) or a log reader gone (EPIPE): the daemon's SIGHUP stop must still be
// clean (its lines are lost, nothing else), not an uncaught 'error' that ends it at once.
process.stderr.on('error', () => {});

async function run(): Promise<never> {
  let code: number;
  try {
    code = await main(process.argv);
  } catch (error) {
    process.stderr.write(`carrier-sync: ${String(error)}\n`);
    code = 1;
  }
  process.exitCode = code;
  // Exit only once the output is out; the exit itself ends a second signal's shutdown at once.
  flushLogLines();
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

void run();
