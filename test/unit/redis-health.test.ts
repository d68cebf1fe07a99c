import { expect, it } from 'vitest';
import { isConnectionError } from '../../src/store/redis-health.js';

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
