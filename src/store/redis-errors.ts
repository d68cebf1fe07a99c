/**
 * What a Redis error means for the process: the connection is gone (unreachable), Redis answers but
 * refuses writes (full), or a primary changed under us (a failover). redis-health.ts turns these
 * into one warn and one info line per episode; the push path keeps an answer through any of them
 * (push/kept-answers.ts); the claims and moves back off quietly.
 */
import { ERROR_CODES } from '../errors.js';

export type RedisTrouble = 'unreachable' | 'writes-refused' | 'failover';

/** Socket-level codes of a connection that is gone or cannot be made. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);
/**
 * ioredis and BullMQ raise these without a code (plain Errors or their own classes), so the name
 * or the fixed message is all there is to go on.
 */
const CONNECTION_NAMES = new Set(['AbortError', 'MaxRetriesPerRequestError', 'ConnectionClosedError', 'ClusterAllFailedError']);
// LOADING: a Redis just restarted answers this until it has read its AOF back: not there yet.
const CONNECTION_MESSAGES = [
  'Connection is closed',
  "Stream isn't writeable",
  'Command aborted due to connection close',
  'None of startup nodes is available',
  // Through Sentinel: no sentinel answered, or none named a primary yet (ioredis retries).
  'All sentinels are unreachable',
  'LOADING',
];
/** Reply prefixes of a Redis that answers but refuses writes. */
const REFUSED_PREFIXES = ['OOM', 'NOREPLICAS', 'MISCONF'];
/**
 * Replies and messages of a primary changing under us. MOVED and ASK are a Cluster's redirections:
 * ioredis follows them itself, except inside a pipeline or MULTI whose commands did not all get the
 * same one; such a reply reaches us after a promotion or a slot's move, and the next try goes to the
 * right node (ioredis refreshed its slot map on seeing it).
 */
const FAILOVER_PREFIXES = [
  'READONLY',
  'UNBLOCKED',
  'Too many Cluster redirections',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'MASTERDOWN',
  'Failed to refresh slots cache',
  'MOVED ',
  'ASK ',
];

export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  // A Unix socket not there yet (the server not started) or not open to this user: the socket's
  // connect fails with these (only a connect's: the same codes from a file are no Redis trouble).
  if ((code === 'ENOENT' || code === 'EACCES') && (error as NodeJS.ErrnoException).syscall === 'connect') return true;
  if (CONNECTION_NAMES.has(error.name) || CONNECTION_NAMES.has(error.constructor.name)) return true;
  if (CONNECTION_MESSAGES.some((text) => error.message.startsWith(text))) return true;
  // A connect timeout, or an error a library wrapped: the socket's error is its cause.
  return error.cause !== undefined && error.cause !== error && isConnectionError(error.cause);
}

/** OOM, NOREPLICAS, MISCONF: Redis answers but takes no write. Also inside a script's error ("… script: …"). */
export function isWritesRefusedError(error: unknown): boolean {
  return messageStartsWith(error, REFUSED_PREFIXES);
}

export function isFailoverError(error: unknown): boolean {
  return messageStartsWith(error, FAILOVER_PREFIXES);
}

/** Redis cannot take a write now: unreachable, refusing writes, or failing over. */
export function isRedisUnavailable(error: unknown): boolean {
  return isConnectionError(error) || isWritesRefusedError(error) || isFailoverError(error);
}

function messageStartsWith(error: unknown, prefixes: readonly string[]): boolean {
  if (!(error instanceof Error)) return false;
  if (prefixes.some((prefix) => error.message.startsWith(prefix))) return true;
  // Redis 6 wraps a script's failed command: "ERR Error running script … @user_script:1: -OOM …".
  if (prefixes.some((prefix) => error.message.includes(`: -${prefix}`))) return true;
  // A MULTI whose commands Redis refused while queueing them (OOM, READONLY): EXECABORT, with the
  // refusals as ioredis' `previousErrors`.
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  if (Array.isArray(previous) && previous.some((each) => messageStartsWith(each, prefixes))) return true;
  return error.cause !== undefined && error.cause !== error && messageStartsWith(error.cause, prefixes);
}

/**
 * The error came from Redis or from the way to it, whatever wraps it (a cause, a MULTI's previous
 * errors): every reply error Redis sent (ioredis' ReplyError: MOVED, READONLY, a script's ERR…)
 * and every error of isRedisUnavailable. Never an answer of the API: an item that meets one waits
 * and is tried again, it is never refused nor dead-lettered for it (push/processor.ts).
 */
export function isRedisError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (isRedisUnavailable(error) || error.name === 'ReplyError' || error.constructor.name === 'ReplyError') return true;
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  if (Array.isArray(previous) && previous.some(isRedisError)) return true;
  return error.cause !== undefined && error.cause !== error && isRedisError(error.cause);
}

/**
 * A text that is a Redis error's message (a failed job's `failedReason`: BullMQ keeps only the
 * message). A reason the job processor gave a dead letter (`<CODE>: <message>`, push/processor.ts)
 * is one only when an earlier version wrapped a Redis error as `NETWORK: unexpected failure: …`;
 * the API's failures (a reset, a timeout of its own) never read as one.
 */
export function isRedisErrorText(text: string | undefined): boolean {
  if (text === undefined) return false;
  const coded = /^([A-Z][A-Z_]*): ([\s\S]*)$/.exec(text);
  if (coded !== null && (ERROR_CODES as readonly string[]).includes(coded[1] ?? '')) {
    const rest = coded[2] ?? '';
    return coded[1] === 'NETWORK' && rest.startsWith(UNEXPECTED) && isRedisErrorText(rest.slice(UNEXPECTED.length));
  }
  const bare = text.startsWith(UNEXPECTED) ? text.slice(UNEXPECTED.length) : text;
  return REDIS_TEXT.some((pattern) => pattern.test(bare));
}

const UNEXPECTED = 'unexpected failure: ';

const REDIS_TEXT: readonly RegExp[] = [
  /^(MOVED|ASK) \d+ \S+:\d+/,
  /^(TRYAGAIN|CLUSTERDOWN|LOADING|READONLY|MASTERDOWN|UNBLOCKED|OOM|NOREPLICAS|MISCONF|EXECABORT|NOSCRIPT|BUSY|WRONGTYPE|NOPERM|NOAUTH|WRONGPASS)\b/,
  /^ERR (Error running script|.*script)/,
  /^Too many Cluster redirections/,
  /^Failed to refresh slots cache/,
  ...CONNECTION_MESSAGES.map((text) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)),
  /^(read|write|connect) (ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE)\b/,
  /^connect (ENOENT|EACCES) \//,
  /^(Reached the max retries per request limit|Command timed out)/,
];

export function troubleOf(error: unknown): RedisTrouble | null {
  if (isConnectionError(error)) return 'unreachable';
  if (isWritesRefusedError(error)) return 'writes-refused';
  if (isFailoverError(error)) return 'failover';
  return null;
}

export function codeOf(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string') return code;
  return /^[A-Z]+/.exec(error.message)?.[0] ?? error.name;
}
