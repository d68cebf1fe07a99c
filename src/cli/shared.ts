/**
 * What every command needs: the loaded config, a logger on stderr, and the Redis context.
 * Heavy modules (BullMQ, the HTTP stacks, pdf-lib, the settings' schema with zod and yaml) are
 * imported inside the commands that use them, so `--help`, `--version` and a usage error start
 * quickly (`--help` 0.86 → 0.56 s of CPU without the schema; test/integration/cli-lazy-load.test.ts).
 */
import type { Command } from 'commander';
import type { Config } from '../config/schema.js';
import { createLogger, type Logger } from '../log.js';
import type { Context } from '../runtime/context.js';

/** The settings (config/load.ts, imported here: `--help`, `--version` and a usage error load no schema). */
export async function configOf(command: Command): Promise<Readonly<Config>> {
  const root = command.optsWithGlobals<{ config?: string }>();
  const { loadConfig } = await import('../config/load.js');
  return loadConfig({ env: process.env, configPath: root.config });
}

/** Commands other than `start` log warnings and worse only, unless LOG_LEVEL asks for more. */
export function cliLogger(config: Readonly<Config>): Logger {
  const level = process.env['LOG_LEVEL'] === undefined ? 'warn' : config.log.level;
  return createLogger({ level, isPretty: process.stderr.isTTY === true });
}

/**
 * How long a command waits for Redis at first before it gives up (one line, exit 1), counted from
 * the process' start: a person waits 6 s in all, not 6 s after a start that a busy machine made
 * slow (three commands at once beside a test run took ~5 s to load, and ended after 10.8 s when the
 * 6 s began after that). At least `CLI_CONTACT_FLOOR_MS`, so a slow start still gives Redis a chance.
 */
const CLI_CONTACT_TIMEOUT_MS = 6000;
const CLI_CONTACT_FLOOR_MS = 2000;

function contactTimeoutMs(): number {
  return Math.max(CLI_CONTACT_FLOOR_MS, Math.round(CLI_CONTACT_TIMEOUT_MS - performance.now()));
}

export async function withContext<T>(command: Command, run: (ctx: Context) => Promise<T>): Promise<T> {
  const config = await configOf(command);
  const { openContext } = await import('../runtime/context.js');
  const ctx = await openContext(config, cliLogger(config), 'cli', { contact: { timeoutMs: contactTimeoutMs() } });
  try {
    return await run(ctx);
  } finally {
    await ctx.closers.closeAll();
  }
}

export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** `30d`, `12h`, `15m`, `45s`, `500ms` → milliseconds. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+)(ms|s|m|h|d|w)$/.exec(text.trim());
  if (match === null) return null;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd' | 'w'];
  return Number(match[1]) * unit;
}
