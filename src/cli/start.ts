import type { Command } from 'commander';
import { isSyncError, SyncError } from '../errors.js';
import type { Config } from '../config/schema.js';
import type { Lang } from '../i18n/langs.js';
import { say, translator } from '../i18n/translate.js';
import { createLogger, type Logger } from '../log.js';
import { routeConsoleToLog } from '../runtime/console-to-log.js';
import type { DaemonHandle, Role } from '../runtime/start.js';
import { UsageError } from './usage-error.js';
import { resolve, sep } from 'node:path';

/** The daemon's roles (runtime/start.ts has the same list; kept here so --help loads nothing heavy). */
export const ROLES: readonly Role[] = ['watcher', 'worker', 'scheduler', 'http'];
import { configOf } from './shared.js';

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run the daemon (all roles by default); SIGTERM/SIGINT/SIGHUP shut it down gracefully, a second signal at once')
    .option('--roles <list>', `comma-separated roles to run: ${ROLES.join(', ')}`, ROLES.join(','))
    .action(async (options: { roles: string }, command: Command) => {
      const { startDaemon } = await import('../runtime/start.js');
      const roles = options.roles
        .split(',')
        .map((role) => role.trim())
        .filter(Boolean);
      const unknown = roles.filter((role) => !(ROLES as readonly string[]).includes(role));
      if (roles.length === 0 || unknown.length > 0) throw rolesError(unknown);
      const config = await configOf(command);
      const logger = createLogger({ level: config.log.level, isPretty: process.stderr.isTTY === true });
      // Libraries' console lines and Node's warnings become log lines too (runtime/console-to-log.ts).
      const restoreConsole = routeConsoleToLog(logger);
      // A mistyped variable is ignored by the settings; one line each says so, with the closest real one.
      const { unknownVariables } = await import('../config/unknown-variables.js');
      for (const { variable, closest } of unknownVariables(process.env)) {
        logger.warn({ variable, closest }, `unknown variable ${variable} ignored: no setting has this name; did you mean ${closest}?`);
      }
      const daemon = startDaemon(config, roles as Role[], logger);
      const stopped = obeySignals(daemon, logger);
      // Whichever comes first: the start's end (the daemon then runs until a signal) or a signal
      // (during the start too: waiting for a Redis that does not answer is no reason to ignore it).
      const started = daemon.ready.then(
        () => null,
        (error: unknown) => ({ error }),
      );
      const first = await Promise.race([started, stopped.then(() => 'stopped' as const)]);
      if (first !== null && first !== 'stopped' && !daemon.isStopRequested()) {
        // A refusal (an evicting Redis, a bad API URL) is main.ts's one line and exit code 2.
        // Anything else is one log line, whole, and exit code 1: no second, plain-text line from
        // main.ts among the JSON ones.
        // A port already taken (a second start in the same folder) is a refusal too: one line saying who holds it.
        const busy = (await portTakenOf(first.error, config)) ?? spoolDeniedOf(first.error, config) ?? managedRedisDeniedOf(first.error, config);
        const error = busy ?? first.error;
        const isRefusal = isSyncError(error) && error.code === 'CONFIG_INVALID';
        if (!isRefusal) logger.fatal({ err: error }, 'start failed');
        await daemon.stop();
        restoreConsole();
        if (isRefusal) throw error;
        process.exitCode = 1;
        return;
      }
      await stopped;
      restoreConsole();
      logger.flush();
    });
}

/**
 * When the start failed because the ops port is taken (EADDRINUSE): a refusal naming the process
 * that listens there (from /proc, when it can be read) and the setting to change; else null.
 */
async function portTakenOf(error: unknown, config: Readonly<Config>): Promise<SyncError | null> {
  if ((error as NodeJS.ErrnoException | null)?.code !== 'EADDRINUSE') return null;
  const { listenerOf } = await import('../runtime/managed-redis/proc-net.js');
  const t = translator(config.lang);
  const port = Number((error as { port?: unknown }).port ?? config.http.port);
  const holder = listenerOf(port);
  const isOurs = holder !== null && /carrier-sync|main\.js/.test(holder.command);
  const who =
    holder === null
      ? t('cli.start.portHolderUnknown')
      : t(isOurs ? 'cli.start.portHolderOurs' : 'cli.start.portHolder', { pid: holder.pid, command: holder.command });
  return new SyncError('CONFIG_INVALID', t('cli.start.portTaken', { address: `${config.http.host}:${port}`, holder: who }));
}

/**
 * When the start failed because the spool may not be written in (EACCES, EPERM under the spool root:
 * the daemon runs as a user the folders are not open to; EROFS: its file system is mounted
 * read-only): a refusal naming the path, the user and what to do; else null. Before, a fatal line
 * with the stack of a temporary file's open.
 */
function spoolDeniedOf(error: unknown, config: Readonly<Config>): SyncError | null {
  const spool = resolve(config.spool.dir);
  const under = (path: string): boolean => path === spool || path.startsWith(`${spool}${sep}`);
  const { code, path } = (error ?? {}) as NodeJS.ErrnoException;
  // A read-only file system is no one's permission to give: the message says what to mount.
  if (code === 'EROFS' && typeof path === 'string' && under(path))
    return new SyncError('CONFIG_INVALID', translator(config.lang)('cli.start.spoolReadOnly', { path }));
  const denied = permissionDeniedOf(error);
  if (denied === null || !under(denied.path)) return null;
  return new SyncError('CONFIG_INVALID', translator(config.lang)('cli.start.spoolDenied', { ...denied, uid: String(process.getuid?.() ?? '?'), spool }));
}

/** The code and path of a permission refusal (EACCES, EPERM) that names a path; null for any other error. */
function permissionDeniedOf(error: unknown): { code: string; path: string } | null {
  const { code, path } = (error ?? {}) as NodeJS.ErrnoException;
  return (code === 'EACCES' || code === 'EPERM') && typeof path === 'string' ? { code, path } : null;
}

/**
 * When the start failed because the managed redis-server's folder may not be made or written in
 * (REDIS_URL unset, the daemon running as a service user in a folder of root's: `./var/redis` under
 * it): a refusal naming the path, the user and the three ways out; else null. Before, a fatal line
 * with the stack of the folder's mkdir.
 */
function managedRedisDeniedOf(error: unknown, config: Readonly<Config>): SyncError | null {
  const denied = permissionDeniedOf(error);
  if (config.redis.url !== null || config.redis.sentinels.length > 0 || denied === null) return null;
  const { path } = denied;
  const dir = resolve(config.redis.managedDir);
  // A recursive mkdir fails on the first folder it may not make: the folder itself, or one above it.
  if (!(path === dir || dir.startsWith(`${path}${sep}`) || path.startsWith(`${dir}${sep}`))) return null;
  return new SyncError('CONFIG_INVALID', translator(config.lang)('cli.start.managedRedisDenied', { ...denied, uid: String(process.getuid?.() ?? '?'), dir }));
}

/** Signals that stop the daemon: a terminal's Ctrl-C, an orchestrator's stop, a closed terminal. */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Within this long of the first signal, the same signal again is the same stop: a terminal's Ctrl-C
 * (or its closing) signals the whole process group, so `npm start` and the daemon both get it, and
 * npm forwards its own: two SIGINTs a few milliseconds apart. A person's second Ctrl-C comes later.
 */
export const SIGNALS_TOGETHER_MS = 1000;

/**
 * The first stop signal shuts the daemon down (within the grace period); a second exits at once
 * (main.ts calls process.exit once the action returns), once the managed redis-server is stopped
 * (bounded: runtime/managed-redis/managed-redis.ts `stopManagedRedisNow`). The same signal again within
 * SIGNALS_TOGETHER_MS of the first is that first one. A part of the daemon that failed for good
 * (the delivery thread crashed: runtime/start.ts logged it, fatal) stops it the same way, exit 1.
 * Resolves when the process may end.
 */
function obeySignals(daemon: DaemonHandle, logger: Logger): Promise<void> {
  let first: { signal: NodeJS.Signals; at: number } | null = null;
  let isExiting = false;
  return new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      const at = Date.now();
      if (first === null) {
        first = { signal, at };
        logger.info({ signal }, 'signal received');
        void daemon.stop().then(() => {
          if (daemon.stopOutcome() === 'grace-expired') process.exitCode = 1;
          resolve();
        });
        return;
      }
      if (signal === first.signal && at - first.at < SIGNALS_TOGETHER_MS) {
        logger.debug({ signal, afterMs: at - first.at }, 'the same signal again at once: one stop (a terminal signals npm and carrier-sync both)');
        return;
      }
      if (isExiting) return;
      isExiting = true;
      logger.warn({ signal }, 'second signal: exiting at once');
      process.exitCode = 130;
      void daemon.exitNow().finally(() => {
        logger.flush();
        resolve();
      });
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
    void daemon.failed.then(() => {
      void daemon.stop().then(() => {
        process.exitCode = 1;
        resolve();
      });
    });
  });
}

/**
 * `--roles` naming no role or an unknown one. The names one types stay as they are; under pt-BR in
 * backticks, set apart from the prose (as in `--help`).
 */
function rolesError(unknown: readonly string[]): UsageError {
  const names = (lang: Lang, list: readonly string[]): string => list.map((name) => (lang === 'en' ? name : `\`${name}\``)).join(', ');
  const line = (lang: Lang): string =>
    unknown.length === 0
      ? say(lang, 'cli.usage.start.noRole', { roles: names(lang, ROLES) })
      : say(lang, 'cli.usage.start.unknownRole', { count: unknown.length, unknown: names(lang, unknown), roles: names(lang, ROLES) });
  return new UsageError(line('en'), line);
}
