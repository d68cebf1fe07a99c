import { expect, it } from 'vitest';
import { isConnectionError, isFailoverError, isRedisUnavailable, isWritesRefusedError } from '../../src/store/redis-health.js';

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
