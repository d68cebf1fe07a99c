/**
 * No secret reaches a log line (src/log.ts `scrubSecrets`): the API's key headers, our config
 * slices' keys and passwords, and the password an ioredis error carries in its failed AUTH
 * command's arguments are logged as '[redacted]', at whatever depth they ride; the rest of the
 * line, and an error's type, message and stack, stay as they were, and the logged object itself
 * is not changed.
 */
import { Writable } from 'node:stream';
import { ReplyError } from 'ioredis';
import { expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

const SECRET = 'sk-live-7c1e0b1d-secret';

function capture(): { lines: Array<Record<string, unknown>>; text(): string; destination: Writable } {
  const chunks: string[] = [];
  return {
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    }),
    text: () => chunks.join(''),
    get lines() {
      return chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
  };
}

it('redacts every secret-bearing key, at any depth the daemon logs them, and leaves the rest', () => {
  const out = capture();
  const logger = createLogger({ level: 'info', destination: out.destination });
  const logged = {
    headers: { 'x-service-carrier-key': SECRET, 'content-type': 'application/json' },
    req: { headers: { Authorization: `Basic ${SECRET}`, host: 'localhost' } },
    request: { headers: { 'x-service-seller-group-key': SECRET } },
    api: { url: 'http://127.0.0.1:1', carrierKey: SECRET, sellerGroupKey: SECRET },
    ops: { uiPassword: SECRET, ingestToken: SECRET },
    smtp: { auth: { password: SECRET } },
    password: SECRET,
    token: SECRET,
    deliveryId: 'D-1',
    sizes: [1, 2, 3],
  };
  logger.info(logged, 'configured');

  expect(out.text()).not.toContain(SECRET);
  const [line] = out.lines;
  expect(line).toMatchObject({
    msg: 'configured',
    deliveryId: 'D-1',
    sizes: [1, 2, 3],
    headers: { 'x-service-carrier-key': '[redacted]', 'content-type': 'application/json' },
    req: { headers: { Authorization: '[redacted]', host: 'localhost' } },
    api: { url: 'http://127.0.0.1:1', carrierKey: '[redacted]' },
    smtp: { auth: { password: '[redacted]' } },
  });
  // The caller's object is not changed.
  expect(logged.api.carrierKey).toBe(SECRET);
});

it("an ioredis error's failed AUTH command keeps its name but not its arguments; the error is logged whole", () => {
  const out = capture();
  const logger = createLogger({ level: 'info', destination: out.destination });
  const error = Object.assign(new ReplyError('WRONGPASS invalid username-password pair'), { command: { name: 'auth', args: ['carrier-sync', SECRET] } });
  logger.error({ err: error }, 'Redis refused');
  logger.error({ wrapped: { err: error } }, 'Redis refused, nested');

  expect(out.text()).not.toContain(SECRET);
  const [direct, nested] = out.lines as Array<{ err: Record<string, unknown>; wrapped: { err: Record<string, unknown> } }>;
  expect(direct!.err).toMatchObject({ type: 'ReplyError', message: 'WRONGPASS invalid username-password pair', command: { name: 'auth', args: '[redacted]' } });
  expect(String(direct!.err['stack'])).toMatch(/^ReplyError: WRONGPASS[^\n]*\n\s+at /);
  expect(nested!.wrapped.err).toMatchObject({ command: { name: 'auth', args: '[redacted]' } });
  expect(error.command.args[1]).toBe(SECRET);
});

it('logs a line without secrets as it was given, a Buffer among its values', () => {
  const out = capture();
  const logger = createLogger({ level: 'info', destination: out.destination });
  logger.info({ kind: 'label', deliveryId: 'D-2', attempt: 1, status: 200, bytes: Buffer.from('abc') }, 'item sent');
  expect(out.lines[0]).toMatchObject({ kind: 'label', deliveryId: 'D-2', attempt: 1, status: 200, msg: 'item sent' });
});
