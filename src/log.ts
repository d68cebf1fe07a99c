import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Every path where a secret could ride along in a log object. The header names are the
 * API's key headers; `*.key`-style paths cover our own config slices.
 */
export const REDACT_PATHS = [
  'headers["x-service-carrier-key"]',
  'headers["x-service-seller-group-key"]',
  'req.headers["x-service-carrier-key"]',
  'req.headers["x-service-seller-group-key"]',
  'req.headers.authorization',
  'request.headers["x-service-carrier-key"]',
  'request.headers["x-service-seller-group-key"]',
  'request.headers.authorization',
  '*.headers["x-service-carrier-key"]',
  '*.headers["x-service-seller-group-key"]',
  '*.headers.authorization',
  'carrierKey',
  'sellerGroupKey',
  '*.carrierKey',
  '*.sellerGroupKey',
  'password',
  '*.password',
  'token',
  '*.token',
  'ingestToken',
  '*.ingestToken',
  'uiPassword',
  '*.uiPassword',
  // ioredis puts the failed command on its errors, arguments included: an AUTH's are the password.
  'err.command.args',
  '*.err.command.args',
];

export interface LogOptions {
  level: string;
  /** Pretty output for humans at a terminal; JSON lines otherwise. */
  isPretty?: boolean;
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LogOptions): Logger {
  const base: LoggerOptions = {
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
  };
  if (options.isPretty === true) {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } },
    });
  }
  // process.stderr, not pino.destination(2): one ordered queue that main.ts waits on before it
  // exits. An async pino.destination writes fd 2 on its own, and at exit its flushSync wrote the
  // lines queued behind a write still in flight first, so a run's last lines came out of order or
  // not at all when the reader of stderr was slow.
  return pino(base, (options.destination ?? batchedStderr) as pino.DestinationStream);
}

/**
 * The lines logged in one turn of the event loop go to stderr in one write: a busy daemon logs
 * ~4 lines a file, and each write to a pipe is a system call (18 % of the daemon's socket writes
 * in the large drop's profile, BENCHMARKS.md issue 29). A turn's lines leave when it ends
 * (process.nextTick runs once the turn's promise callbacks have run), or at once past
 * STDERR_BATCH_CHARS; main.ts writes what is left before it exits, and the exit event for any
 * other way out. Order is kept: every line goes through this one buffer.
 */
const STDERR_BATCH_CHARS = 64 * 1024;
let pendingLines = '';
let isFlushScheduled = false;

/** Writes the lines logged so far to stderr (main.ts, before the process exits). */
export function flushLogLines(): void {
  isFlushScheduled = false;
  if (pendingLines === '') return;
  const text = pendingLines;
  pendingLines = '';
  process.stderr.write(text);
}

const batchedStderr = {
  write(line: string): boolean {
    pendingLines += line;
    if (pendingLines.length >= STDERR_BATCH_CHARS) flushLogLines();
    else if (!isFlushScheduled) {
      isFlushScheduled = true;
      process.nextTick(flushLogLines);
    }
    return true;
  },
  /** pino's `logger.flush()`. */
  flush(callback?: (error?: Error) => void): void {
    flushLogLines();
    callback?.();
  },
};
process.on('exit', flushLogLines);

/** A logger that drops everything, for library code called without one. */
export const silentLogger: Logger = pino({ level: 'silent' });
