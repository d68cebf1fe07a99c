import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { expect, it } from 'vitest';
import { SyncError } from '../../src/errors.js';
import { isConnectionError, isFailoverError, isRedisError, isRedisErrorText, isRedisUnavailable, isWritesRefusedError } from '../../src/store/redis-health.js';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });
const named = (name: string, message: string): Error => Object.assign(new Error(message), { name });

it.each([
  ['connect ECONNREFUSED (code)', withCode('connect ECONNREFUSED 127.0.0.1:6379', 'ECONNREFUSED'), true],
  ['read ECONNRESET (code)', withCode('read ECONNRESET', 'ECONNRESET'), true],
  ["ioredis' closed connection", new Error('Connection is closed.'), true],
  ['a Redis still loading its data after a restart', new Error('LOADING Redis is loading the dataset in memory'), true],
  ["ioredis' aborted command", named('AbortError', 'Command aborted due to connection close'), true],
  ['a wrapped socket error', new Error('no reply', { cause: withCode('connect ETIMEDOUT', 'ETIMEDOUT') }), true],
  ['a script error', named('ReplyError', 'ERR Error running script'), false],
  ['an OOM reply', named('ReplyError', 'OOM command not allowed when used memory > maxmemory'), false],
  ['not an Error', 'ECONNREFUSED', false],
])('%s is a connection error: %s', (_, error, expected) => {
  expect(isConnectionError(error)).toBe(expected);
});

it('a Unix socket that is not there is a connection error (REDIS_URL unix://, Redis not started yet); the same code from a file is not', async () => {
  const missing = await new Promise<Error>((resolve) => connect('/nonexistent-carrier-sync-dir/redis.sock').once('error', resolve));
  expect(missing).toMatchObject({ code: 'ENOENT', syscall: 'connect' });
  expect(isConnectionError(missing)).toBe(true);
  expect(isRedisErrorText(missing.message)).toBe(true);
  const fromFile = await readFile('/nonexistent-carrier-sync-dir/label.pdf').catch((error: unknown) => error);
  expect(fromFile).toMatchObject({ code: 'ENOENT' });
  expect(isConnectionError(fromFile)).toBe(false);
});

it.each([
  ['an OOM reply', named('ReplyError', "OOM command not allowed when used memory > 'maxmemory'."), 'refused'],
  [
    'an OOM inside one of our scripts (Redis 7)',
    named('ReplyError', "OOM command not allowed when used memory > 'maxmemory'. script: ecaa70, on @user_script:1."),
    'refused',
  ],
  ['an OOM inside a script (Redis 6)', named('ReplyError', 'ERR Error running script (call to f_ecaa70): @user_script:1: -OOM command not allowed'), 'refused'],
  ['min-replicas-to-write not met', named('ReplyError', 'NOREPLICAS Not enough good replicas to write.'), 'refused'],
  ['a failed RDB save', named('ReplyError', 'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.'), 'refused'],
  ['a demoted primary', named('ReplyError', "READONLY You can't write against a read only replica."), 'failover'],
  [
    'a blocking command cut by a failover',
    named('ReplyError', 'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'),
    'failover',
  ],
  ['a Cluster mid-failover', new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'), 'failover'],
  ['a Cluster down', named('ReplyError', 'CLUSTERDOWN The cluster is down'), 'failover'],
  [
    'a MULTI refused while full',
    Object.assign(named('ReplyError', 'EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [named('ReplyError', "OOM command not allowed when used memory > 'maxmemory'.")],
    }),
    'refused',
  ],
  [
    'a MULTI on a demoted primary',
    Object.assign(named('ReplyError', 'EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [named('ReplyError', "READONLY You can't write against a read only replica.")],
    }),
    'failover',
  ],
  ['a script bug', named('ReplyError', 'ERR Error running script: attempt to compare nil with number'), 'neither'],
])('%s: %s', (_, error, expected) => {
  expect(isWritesRefusedError(error)).toBe(expected === 'refused');
  expect(isFailoverError(error)).toBe(expected === 'failover');
  expect(isRedisUnavailable(error)).toBe(expected !== 'neither');
});

// Issue 44 point 3: a Redis error is never taken for the API's refusal, whatever wraps it.
it.each([
  ['a Cluster redirect after a promotion', named('ReplyError', 'MOVED 7684 127.0.0.1:46093')],
  ['a Cluster redirect during a slot migration', named('ReplyError', 'ASK 7684 127.0.0.1:46093')],
])('%s is a failover, Redis unavailable for now', (_, error) => {
  expect(isFailoverError(error)).toBe(true);
  expect(isRedisUnavailable(error)).toBe(true);
  expect(isRedisError(error)).toBe(true);
});

it.each([
  ['a bare reply error', named('ReplyError', 'MOVED 7684 127.0.0.1:46093')],
  ['a script bug (a reply error of Redis)', named('ReplyError', 'ERR Error running script: attempt to compare nil with number')],
  ['a closed connection', new Error('Connection is closed.')],
  ['a reset Redis socket', withCode('read ECONNRESET', 'ECONNRESET')],
  ['wrapped as a cause', new Error('moving the job failed', { cause: named('ReplyError', 'TRYAGAIN Multiple keys request during rehashing of slot') })],
  ['wrapped twice', new Error('outer', { cause: new Error('inner', { cause: named('ReplyError', 'CLUSTERDOWN The cluster is down') }) })],
  [
    'inside a MULTI',
    Object.assign(named('ReplyError', 'EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [named('ReplyError', 'MOVED 7684 127.0.0.1:46093')],
    }),
  ],
  ['a Redis loading its data', named('ReplyError', 'LOADING Redis is loading the dataset in memory')],
])('%s is a Redis error', (_, error) => {
  expect(isRedisError(error)).toBe(true);
});

it.each([
  ['an API answer', new SyncError('API_REJECTED', 'the API rejected the request', { status: 400 }), false],
  ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'x')"), false],
  ['not an Error', 'MOVED 1 a:1', false],
])('%s is not a Redis error', (_, error, expected) => {
  expect(isRedisError(error)).toBe(expected);
});

it.each([
  // What BullMQ keeps as a failed job's reason: the message only.
  ['MOVED 7684 127.0.0.1:46093', true],
  ['ASK 7684 127.0.0.1:46093', true],
  ['TRYAGAIN Multiple keys request during rehashing of slot', true],
  ['CLUSTERDOWN The cluster is down', true],
  ['LOADING Redis is loading the dataset in memory', true],
  ["READONLY You can't write against a read only replica.", true],
  ['Connection is closed.', true],
  ['read ECONNRESET', true],
  ['Too many Cluster redirections. Last error: Error: Connection is closed.', true],
  ['ERR Error running script (call to f_ecaa70): @user_script:1: attempt to compare nil', true],
  // An earlier version wrapped a Redis error met in the API call as NETWORK.
  ['NETWORK: unexpected failure: MOVED 7684 127.0.0.1:46093', true],
  // Dead letters the job processor made: the API's answers, or retries that ran out on the API.
  ['API_REJECTED: the API rejected the request (400)', false],
  ['API_UNAVAILABLE: the API is unavailable (503)', false],
  ['NETWORK: read ECONNRESET', false],
  ['TIMEOUT: the API did not answer within 30000 ms', false],
  ['job stalled more than allowable limit', false],
  [undefined, false],
])('the failed reason %j is a Redis error: %s', (text, expected) => {
  expect(isRedisErrorText(text)).toBe(expected);
});
