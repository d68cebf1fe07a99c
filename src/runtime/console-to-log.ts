/**
 * In the daemon every line on stdout and stderr is one of our JSON log lines: a log pipeline
 * (Loki, Elasticsearch, journald → …) gets both streams, and a plain-text line among the JSON ones
 * is noise at best. Libraries write with `console.*` (BullMQ prints its Redis warnings, ioredis an
 * unhandled connection error) and Node prints process warnings itself; this routes both through
 * pino, as `mod: console` / `mod: node`, for as long as the daemon runs.
 */
import { format } from 'node:util';
import type { Logger } from '../log.js';

/**
 * BullMQ prints this once per connection when maxmemory-policy is not noeviction; the daemon
 * checks the policy itself at start (refuses, or warns once), so these copies go to debug.
 */
const BULLMQ_EVICTION_WARNING = /^IMPORTANT! Eviction policy is /;

type ConsoleMethod = 'log' | 'info' | 'warn' | 'error' | 'debug' | 'trace';

/** Installs the routing; the returned function puts `console` and Node's warning printer back. */
export function routeConsoleToLog(logger: Logger): () => void {
  const log = logger.child({ mod: 'console' });
  const saved = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  const route = (method: ConsoleMethod, level: 'debug' | 'info' | 'warn' | 'error'): void => {
    saved.set(method, console[method]);
    console[method] = (...args: unknown[]) => {
      const first = args[0];
      const err = args.find((arg): arg is Error => arg instanceof Error);
      // An Error alone is logged whole (stack, cause); anything else as the text console would print.
      const msg = err !== undefined && args.length === 1 ? err.message : format(...args);
      const isEvictionCopy = typeof first === 'string' && BULLMQ_EVICTION_WARNING.test(first);
      log[isEvictionCopy ? 'debug' : level](err === undefined ? {} : { err }, msg);
    };
  };
  route('log', 'info');
  route('info', 'info');
  route('debug', 'debug');
  route('trace', 'debug');
  route('warn', 'warn');
  route('error', 'error');

  // Node prints process warnings (MaxListenersExceeded, deprecations) through its own listener.
  const nodeLog = logger.child({ mod: 'node' });
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  const onWarning = (warning: Error): void => nodeLog.warn({ err: warning }, warning.message);
  process.on('warning', onWarning);

  return () => {
    for (const [method, original] of saved) console[method] = original;
    process.off('warning', onWarning);
    for (const printer of printers) process.on('warning', printer);
  };
}
