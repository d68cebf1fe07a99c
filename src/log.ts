import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * The keys under which a secret could ride along in a log object, at any depth up to
 * SCRUB_DEPTH: the API's key headers (`headers`, `req.headers`, `*.headers`), our config slices'
 * secrets (`carrierKey`, `*.password`, …). Their values are logged as '[redacted]'. Besides these,
 * ioredis puts the failed command on its errors, arguments included: an AUTH's are the password,
 * so a `command`'s `args` are redacted too.
 */
const SECRET_KEYS = new Set([
  'x-service-carrier-key',
  'x-service-seller-group-key',
  'authorization',
  'carrierkey',
  'sellergroupkey',
  'password',
  'token',
  'ingesttoken',
  'uipassword',
]);
const CENSOR = '[redacted]';
/** Deep enough for `*.err.command.args` and `*.req.headers.authorization`, the deepest of them. */
const SCRUB_DEPTH = 4;

/**
 * A log object with every secret's value replaced, copied only where one is found (a log line
 * without secrets, nearly all of them, is passed through as it is). Error objects stay errors
 * (the err serializer still gives their type, message and stack).
 *
 * Hand-written in place of pino's `redact` paths: with the wildcard paths these keys needed
 * (`*.headers…`, `*.password`, `*.err.command.args`), pino's redaction made each log line ~10× as
 * costly (39.6 against 3.6 µs a line, measured on an `item sent` line), ~3 % of the daemon's CPU
 * on the large drop (BENCHMARKS.md, issue 29).
 */
export function scrubSecrets<T>(value: T, depth = 0, parentKey = ''): T {
  if (depth > SCRUB_DEPTH || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  let copy: Record<string, unknown> | undefined;
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    const inner = source[key];
    const isSecret = SECRET_KEYS.has(key.toLowerCase()) || (key === 'args' && parentKey === 'command');
    const scrubbed = isSecret && inner !== undefined ? CENSOR : scrubSecrets(inner, depth + 1, key);
    if (scrubbed === inner) continue;
    copy ??= (
      Array.isArray(value) ? [...(value as unknown[])] : Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value))
    ) as Record<string, unknown>;
    Object.defineProperty(copy, key, { value: scrubbed, enumerable: true, writable: true, configurable: true });
  }
  return (copy ?? value) as T;
}

export interface LogOptions {
  level: string;
  /** Pretty output for humans at a terminal; JSON lines otherwise. */
  isPretty?: boolean;
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LogOptions): Logger {
  const base: LoggerOptions = {
    level: options.level,
    formatters: { log: (object) => scrubSecrets(object) },
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
 * The lines logged in one pass of the event loop go to stderr in one write: a busy daemon logs
 * ~3 lines a file, and each write to a pipe is a system call (18 % of the daemon's socket writes
 * in the large drop's profile, BENCHMARKS.md issue 29). A pass's lines leave when its I/O
 * callbacks and their promise callbacks have run (setImmediate: one write for the lines of every
 * Redis reply, HTTP answer and file call handled in that pass; at the end of each callback's turn
 * instead, process.nextTick, it was a write for nearly every file), or at once past
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
      setImmediate(flushLogLines);
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

/**
 * Log lines made elsewhere (the delivery thread's, runtime/delivery-thread/delivery-thread.ts), already JSON and
 * newline-ended, written to `logger`'s own destination: the same ordered queue as its own lines
 * (batched stderr, a test's stream, or pino-pretty's transport, which reads JSON lines).
 */
export function writeLogLines(logger: Logger, text: string): void {
  const stream = (logger as unknown as Record<symbol, { write(text: string): unknown } | undefined>)[pino.symbols.streamSym];
  stream?.write(text);
}

/** A logger that drops everything, for library code called without one. */
export const silentLogger: Logger = pino({ level: 'silent' });
