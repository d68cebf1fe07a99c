/**
 * The first contact with Redis at start: resolves once it answers. Redis not up yet, or a
 * failover under way, is waited out (every connection retries without end). A refusal that no
 * retry cures, an untrusted certificate or a wrong user or password, rejects at once as
 * CONFIG_INVALID (exit 2) in one line that says what to fix, and never repeats a password.
 *
 * Through Sentinel or on a Cluster, ioredis hides a TLS failure behind "Connection is closed"
 * (the sentinel and node connections swallow their errors), so before connecting to one over TLS
 * a single handshake with a sentinel or seed node, trusting what Node trusts, checks the certificate.
 */
import { connect as tlsConnect } from 'node:tls';
import type { RedisNode, RedisTarget } from '../config/redis-target.js';
import { configRefusal } from '../config/refusal.js';
import type { SyncError } from '../errors.js';
import type { RedisConnection } from './redis.js';

const TLS_REFUSAL =
  /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|ERR_TLS_CERT_ALTNAME_INVALID|unable to verify the first certificate|self[- ]signed certificate/;
const AUTH_REFUSAL = /WRONGPASS|NOAUTH|NOPERM|invalid username-password/;
const HANDSHAKE_TIMEOUT_MS = 5000;

/** A refusal no retry cures (see the header). */
export function isRefusal(error: Error): boolean {
  const text = `${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`;
  return TLS_REFUSAL.test(text) || AUTH_REFUSAL.test(text);
}

/**
 * Before the first connection to Sentinel or a Cluster over TLS: one handshake with the first
 * sentinel or seed node, trusting what Node trusts. An untrusted certificate rejects here (see the
 * header); a node not reached says nothing (the connection then waits for it).
 */
export async function checkTrust(target: RedisTarget): Promise<void> {
  if (target.kind === 'single' || !(target.isTls || (target.kind === 'sentinel' && target.isSentinelTls))) return;
  const problem = await handshakeProblem(firstNode(target));
  if (problem !== null) throw untrusted(target, problem);
}

export async function firstContact(redis: RedisConnection, target: RedisTarget): Promise<void> {
  let onError: ((error: Error) => void) | undefined;
  const refused = new Promise<never>((_, reject) => {
    onError = (error: Error) => {
      const refusal = refusalOf(target, error);
      if (refusal !== null) reject(refusal);
    };
    redis.on('error', onError);
  });
  try {
    await Promise.race([redis.ping().catch((error: Error) => Promise.reject(refusalOf(target, error) ?? error)), refused]);
  } finally {
    redis.off('error', onError!);
  }
}

function refusalOf(target: RedisTarget, error: Error): SyncError | null {
  const text = `${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`;
  if (TLS_REFUSAL.test(text)) return untrusted(target, error.message, error);
  if (!AUTH_REFUSAL.test(text)) return null;
  // ioredis reports a sentinel's refusal inside its "All sentinels are unreachable" error.
  const key = error.message.startsWith('All sentinels are unreachable') ? 'config.error.redisSentinelsRefused' : 'config.error.redisAuthRefused';
  // Redis' own words stay as it wrote them, in parentheses (the reader's words around them).
  return configRefusal(key, { address: target.address, detail: firstLine(error.message) }, { cause: error });
}

function untrusted(target: RedisTarget, reason: string, cause?: Error): SyncError {
  return configRefusal('config.error.redisUntrusted', { address: target.address, detail: firstLine(reason) }, { cause });
}

function firstNode(target: RedisTarget): RedisNode {
  if (target.kind === 'sentinel') return target.sentinels[0]!;
  if (target.kind === 'cluster') return target.nodes[0]!;
  return target.node;
}

/** One TLS handshake with `node`: the certificate's problem, or null (trusted, or not reached at all). */
function handshakeProblem(node: RedisNode): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: node.host, port: node.port, timeout: HANDSHAKE_TIMEOUT_MS });
    const done = (problem: string | null): void => {
      socket.destroy();
      resolve(problem);
    };
    socket.once('secureConnect', () => done(null));
    socket.once('timeout', () => done(null));
    socket.once('error', (error: NodeJS.ErrnoException) => done(TLS_REFUSAL.test(`${error.code ?? ''} ${error.message}`) ? error.message : null));
  });
}

function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/(rediss?|unix):\/\/\S*@/g, '$1://…@').slice(0, 200);
}
