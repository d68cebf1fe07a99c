/**
 * The first contact with Redis, as every command waits for it. Redis not answering yet (a typo in
 * REDIS_URL, a Redis that comes up after the daemon under compose or Kubernetes) is a state, not
 * a hang:
 *
 * - `onWaiting` is told once, with a line for the operator naming the address tried and the
 *   setting that gave it (never a password: `target.address` holds none), as soon as a connection
 *   fails or nothing has answered for WAITING_AFTER_MS. The connections keep retrying with their
 *   backoff (store/redis.ts), so the contact resolves whenever Redis comes.
 * - `signal` (the daemon's first stop signal) ends the wait at once: the start is abandoned.
 * - `timeoutMs` (the CLI commands) gives up with one line saying what was tried.
 *
 * A refusal no retry cures (wrong password, untrusted certificate) rejects at once (first-contact.ts).
 */
import type { RedisTarget } from '../config/redis-target.js';
import { firstContact, isRefusal } from '../store/first-contact.js';
import type { RedisConnection } from '../store/redis.js';

export interface ContactOptions {
  /** Ends the wait (the start is abandoned): rejects with ContactAbandoned. */
  signal?: AbortSignal;
  /** Give up after this long (CLI commands); unset: wait for ever (the daemon). */
  timeoutMs?: number;
  /** Told once, when Redis does not answer at first: the operator's line (address, setting, error). */
  onWaiting?: (reason: string) => void;
}

/** Nothing has answered for this long: say so even without an error (a firewall that drops packets). */
const WAITING_AFTER_MS = 1500;

/** The wait was ended by a stop signal. */
export class ContactAbandoned extends Error {
  constructor() {
    super('stopped before Redis answered');
    this.name = 'ContactAbandoned';
  }
}

export function isContactAbandoned(error: unknown): error is ContactAbandoned {
  return error instanceof ContactAbandoned;
}

/** A command's wait for Redis ran out (timeoutMs): what was tried, so the CLI can say it in the reader's language. */
export class ContactGaveUp extends Error {
  constructor(
    readonly address: string,
    readonly setting: string,
    /** The last connection error's text, or null when nothing answered at all. */
    readonly why: string | null,
    readonly afterMs: number,
  ) {
    super(`redis not reachable at ${address} (from ${setting}): ${why ?? 'no answer yet'}; gave up after ${afterMs} ms`);
    this.name = 'ContactGaveUp';
  }
}

/** The operator's line while Redis does not answer. */
export function unreachableReason(target: RedisTarget, setting: string, error: Error | null): string {
  const why = error === null ? 'no answer yet' : errorText(error);
  return `redis not reachable at ${target.address} (from ${setting}): ${why}; retrying with backoff until it answers`;
}

/** Resolves once every one of `connections` answers (see the header). */
export async function awaitContact(connections: readonly RedisConnection[], target: RedisTarget, setting: string, options: ContactOptions): Promise<void> {
  const [main, ...others] = connections;
  let isWaitingSaid = false;
  const sayWaiting = (error: Error | null): void => {
    if (isWaitingSaid) return;
    isWaitingSaid = true;
    options.onWaiting?.(unreachableReason(target, setting, error));
  };
  let lastError: Error | null = null;
  const onError = (error: Error): void => {
    if (isRefusal(error)) return;
    lastError = error;
    sayWaiting(error);
  };
  for (const connection of connections) connection.on('error', onError);
  const timers: NodeJS.Timeout[] = [setTimeout(() => sayWaiting(null), WAITING_AFTER_MS)];
  let onAbort = (): void => {};
  const ended = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new ContactAbandoned());
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted === true) onAbort();
    if (options.timeoutMs !== undefined)
      timers.push(
        setTimeout(() => {
          const last: Error | null = lastError;
          reject(new ContactGaveUp(target.address, setting, last === null ? null : errorText(last), options.timeoutMs!));
        }, options.timeoutMs),
      );
  });
  const contact = (async () => {
    await firstContact(main!, target);
    for (const other of others) await other.ping();
  })();
  contact.catch(() => {}); // a wait ended by a signal or the timeout: its late failure is nobody's
  try {
    await Promise.race([contact, ended]);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    for (const connection of connections) connection.off('error', onError);
  }
}

function errorText(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  const line = (error.message.split('\n')[0] ?? '').replace(/(rediss?|unix):\/\/\S*@/g, '$1://…@').slice(0, 200);
  return code === undefined || line.includes(code) ? line : `${code} ${line}`;
}
