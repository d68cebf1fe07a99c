import { errors as undiciErrors } from 'undici';
import { describe, expect, it } from 'vitest';
import { fromTransportError, MAX_KEPT_BODY_BYTES, parseRetryAfter, readErrorBody, toSyncError, truncateBody, unreadableSuccess } from '../../src/api/errors.js';
import { DISPOSITIONS, ERROR_CODES, SyncError, type Disposition, type ErrorCode } from '../../src/errors.js';

const NOW = Date.parse('2025-03-10T12:00:00Z');
const json = (value: unknown): string => JSON.stringify(value);
const respond = (status: number, body: string, retryAfter?: string | string[]): SyncError =>
  toSyncError({ endpoint: 'label', status, body, retryAfter, nowMs: NOW });

const SHAPE_A = { code: 'DELIVERY_NOT_FOUND', message: 'Delivery not found', level: 'WARNING', status: 404, params: { delivery_id: 'd-1' } };
const SHAPE_B = { code: 'INVALID_PARAMS', message: 'Invalid params', status: 400 };
const SHAPE_C = { message: 'Order not found', code: 'ORDER_NOT_FOUND', status: 'NOT_FOUND' };
const SHAPE_D = {
  status_code: 400,
  timestamp: '2025-03-10T12:00:00Z',
  message: 'Invalid zipcode',
  code: 'INVALID_DESTINATION_ZIPCODE',
  error_id: '0f8c2a58-4c1e-4d8e-9a57-3c1f7f6b2e10',
  params: { destination_zipcode: '000' },
};
const SHAPE_E = { message: 'Unauthorized' };

describe('readErrorBody reads the five shapes of §7', () => {
  it('A: code, message, level, numeric status, params', () => {
    expect(readErrorBody(json(SHAPE_A))).toEqual({
      shape: 'A',
      code: 'DELIVERY_NOT_FOUND',
      message: 'Delivery not found',
      level: 'WARNING',
      params: { delivery_id: 'd-1' },
    });
  });
  it('A without params (level WARNING, bad PDF)', () => {
    const body = { code: 'UNAUTHORIZED', message: 'Invalid PDF', level: 'WARNING', status: 400 };
    expect(readErrorBody(json(body))).toEqual({ shape: 'A', code: 'UNAUTHORIZED', message: 'Invalid PDF', level: 'WARNING' });
  });
  it('B: code, message, numeric status', () => {
    expect(readErrorBody(json(SHAPE_B))).toEqual({ shape: 'B', code: 'INVALID_PARAMS', message: 'Invalid params' });
  });
  it('C: message, code, status as text', () => {
    expect(readErrorBody(json(SHAPE_C))).toEqual({ shape: 'C', code: 'ORDER_NOT_FOUND', message: 'Order not found' });
  });
  it('D: status_code, timestamp, error_id, params', () => {
    expect(readErrorBody(json(SHAPE_D))).toEqual({
      shape: 'D',
      code: 'INVALID_DESTINATION_ZIPCODE',
      message: 'Invalid zipcode',
      params: { destination_zipcode: '000' },
      errorId: SHAPE_D.error_id,
    });
  });
  it('E: message only', () => {
    expect(readErrorBody(json(SHAPE_E))).toEqual({ shape: 'E', message: 'Unauthorized' });
  });
  it.each([
    ['empty', ''],
    ['HTML', '<html><body>502 Bad Gateway</body></html>'],
    ['truncated JSON', '{"code":"X","mess'],
    ['a JSON array', '[1,2]'],
    ['a JSON string', '"oops"'],
    ['JSON null', 'null'],
    ['an object with neither code nor message', json({ error: 'boom' })],
    ['non-string code and message', json({ code: 7, message: { text: 'x' } })],
  ])('returns null for %s', (_what, body) => {
    expect(readErrorBody(body)).toBeNull();
  });
  it('ignores params that are not an object', () => {
    expect(readErrorBody(json({ ...SHAPE_B, params: 'x' }))).not.toHaveProperty('params');
  });
});

describe('toSyncError keeps what the API said', () => {
  it.each([
    ['A', 404, SHAPE_A, { apiCode: 'DELIVERY_NOT_FOUND', apiMessage: 'Delivery not found', apiLevel: 'WARNING', params: { delivery_id: 'd-1' } }],
    ['B', 400, SHAPE_B, { apiCode: 'INVALID_PARAMS', apiMessage: 'Invalid params' }],
    ['C', 404, SHAPE_C, { apiCode: 'ORDER_NOT_FOUND', apiMessage: 'Order not found' }],
    ['D', 400, SHAPE_D, { apiCode: 'INVALID_DESTINATION_ZIPCODE', apiMessage: 'Invalid zipcode', params: { destination_zipcode: '000' } }],
    ['E', 401, SHAPE_E, { apiMessage: 'Unauthorized' }],
  ])('shape %s', (_shape, status, body, expected) => {
    const error = respond(status, json(body));
    expect(error).toBeInstanceOf(SyncError);
    expect(error).toMatchObject({ status, ...expected });
    expect(error.body).toBeUndefined();
  });
  it('puts the API code, message and error_id in the message', () => {
    const error = respond(400, json(SHAPE_D));
    expect(error.message).toContain('INVALID_DESTINATION_ZIPCODE: Invalid zipcode');
    expect(error.message).toContain(SHAPE_D.error_id);
    expect(error.message).toContain('HTTP 400');
  });
  it('classes an unreadable body by HTTP status and keeps it', () => {
    const html = '<html>Bad gateway</html>';
    expect(respond(502, html)).toMatchObject({ code: 'API_UNAVAILABLE', status: 502, body: html });
    expect(respond(401, 'nope')).toMatchObject({ code: 'API_UNAUTHORIZED', body: 'nope' });
    expect(respond(400, '')).toMatchObject({ code: 'API_REJECTED', status: 400 });
    expect(respond(400, '').body).toBeUndefined();
  });
  it('truncates a large unreadable body to 2 KB, never inside a character', () => {
    const body = 'é'.repeat(5000);
    const error = respond(500, body);
    expect(Buffer.byteLength(error.body ?? '')).toBeLessThanOrEqual(MAX_KEPT_BODY_BYTES);
    expect(error.body).toMatch(/^é+…\[truncated]$/);
    expect(truncateBody('short')).toBe('short');
    expect(Buffer.byteLength(truncateBody('x'.repeat(10_000)))).toBeLessThanOrEqual(MAX_KEPT_BODY_BYTES);
  });
  it('a 2xx with an unreadable body is API_UNAVAILABLE (retry) and keeps the body', () => {
    const error = unreadableSuccess('collecting', 200, '<html>');
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE', disposition: 'retry', status: 200, body: '<html>' });
  });
});

describe('Retry-After', () => {
  it.each([
    ['2', 2000],
    [' 120 ', 120_000],
    ['0', 0],
    ['1.5', 1500],
    ['Mon, 10 Mar 2025 12:00:30 GMT', 30_000],
    ['Mon, 10 Mar 2025 11:59:00 GMT', 0],
    [['3', '9'], 3000],
  ] as const)('%j → %d ms', (value, expected) => {
    expect(parseRetryAfter(value as string | string[], NOW)).toBe(expected);
  });
  it.each([undefined, '', '-5', '1e3', 'soon', 'Mon, 99 Foo 2025'])('%j → undefined', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
  it('a 429 carries retryAfterMs from seconds or an HTTP-date', () => {
    expect(respond(429, json(SHAPE_E), '2')).toMatchObject({ code: 'API_RATE_LIMITED', disposition: 'rate-limited', retryAfterMs: 2000 });
    expect(respond(429, '', 'Mon, 10 Mar 2025 12:01:00 GMT').retryAfterMs).toBe(60_000);
    expect(respond(429, '').retryAfterMs).toBeUndefined();
  });
  it('a 503 with Retry-After keeps it too', () => {
    expect(respond(503, '', '7')).toMatchObject({ code: 'API_UNAVAILABLE', retryAfterMs: 7000 });
  });
});

describe('classification by status and code together', () => {
  const body = (code?: string): string => (code === undefined ? '' : json({ code, message: 'm', status: 0 }));
  it.each<[number, string | undefined, ErrorCode, string]>([
    [401, undefined, 'API_UNAUTHORIZED', 'only a 401 means a bad key'],
    [401, 'UNAUTHORIZED', 'API_UNAUTHORIZED', '401 with a code'],
    [400, 'UNAUTHORIZED', 'API_REJECTED', 'bad label PDF: code UNAUTHORIZED with 400 is not a key problem'],
    [429, undefined, 'API_RATE_LIMITED', 'rate limit'],
    [500, undefined, 'API_UNAVAILABLE', 'server error'],
    [502, undefined, 'API_UNAVAILABLE', 'bad gateway'],
    [503, 'UNAUTHORIZED', 'API_UNAVAILABLE', '5xx wins over any code'],
    [504, undefined, 'API_UNAVAILABLE', 'gateway timeout'],
    [404, 'DELIVERY_NOT_FOUND', 'API_NOT_FOUND', 'label: unknown delivery'],
    [400, 'DELIVERY_NOT_FOUND', 'API_NOT_FOUND', 'CT-e: unknown delivery comes as 400'],
    [404, 'ORDER_NOT_FOUND', 'API_NOT_FOUND', 'order lookup'],
    [404, 'INVOICE_NOT_FOUND_OR_NOT_IN_SELLER_GROUP', 'API_NOT_FOUND', 'order update'],
    [404, undefined, 'API_NOT_FOUND', '404 without a body'],
    [400, 'CTE_VALIDATION_ERROR', 'API_REJECTED', 'CT-e field errors'],
    [400, 'INVALID_PARAMS', 'API_REJECTED', 'order update without fields'],
    [400, 'INVALID_DESTINATION_ZIPCODE', 'API_REJECTED', 'quotation'],
    [400, undefined, 'API_REJECTED', '400 without a body'],
    [403, undefined, 'API_REJECTED', 'forbidden'],
    [409, undefined, 'API_REJECTED', 'conflict'],
    [413, undefined, 'API_REJECTED', 'payload too large'],
    [422, undefined, 'API_REJECTED', 'unprocessable'],
    [408, undefined, 'TIMEOUT', 'the server timed out waiting for us: resend'],
    [302, undefined, 'API_UNAVAILABLE', 'a redirect is not an answer'],
  ])('%d %s → %s (%s)', (status, apiCode, expected) => {
    const error = respond(status, body(apiCode));
    expect(error.code).toBe(expected);
    expect(error.disposition).toBe(DISPOSITIONS[expected]);
    expect(error.status).toBe(status);
    if (apiCode !== undefined) expect(error.apiCode).toBe(apiCode);
  });
});

describe('transport errors', () => {
  const errno = (code: string): Error => Object.assign(new Error(`connect ${code}`), { code });
  it.each<[string, unknown, ErrorCode]>([
    ['connect timeout', new undiciErrors.ConnectTimeoutError(), 'TIMEOUT'],
    ['headers timeout', new undiciErrors.HeadersTimeoutError(), 'TIMEOUT'],
    ['body timeout', new undiciErrors.BodyTimeoutError(), 'TIMEOUT'],
    ['ETIMEDOUT', errno('ETIMEDOUT'), 'TIMEOUT'],
    ['socket closed', new undiciErrors.SocketError('other side closed'), 'NETWORK'],
    ['ECONNRESET', errno('ECONNRESET'), 'NETWORK'],
    ['ECONNREFUSED', errno('ECONNREFUSED'), 'NETWORK'],
    ['ENOTFOUND', errno('ENOTFOUND'), 'NETWORK'],
    ['AggregateError of refusals', new AggregateError([errno('ECONNREFUSED')], 'all failed'), 'NETWORK'],
    ['wrapped in cause', new Error('outer', { cause: new undiciErrors.HeadersTimeoutError() }), 'TIMEOUT'],
    ['a parser error', Object.assign(new Error('bad'), { code: 'HPE_INVALID_CONSTANT' }), 'API_UNAVAILABLE'],
    ['response too large', new undiciErrors.ResponseExceededMaxSizeError(), 'API_UNAVAILABLE'],
    ['something unknown', new Error('what'), 'NETWORK'],
    ['not even an Error', 'string thrown', 'NETWORK'],
  ])('%s → %s', (_what, error, expected) => {
    const syncError = fromTransportError('cte', error);
    expect(syncError.code).toBe(expected);
    expect(syncError.status).toBeUndefined();
    expect(syncError.message.startsWith('cte: ')).toBe(true);
  });
  it('passes a SyncError through unchanged', () => {
    const original = new SyncError('CONFIG_INVALID', 'x');
    expect(fromTransportError('label', original)).toBe(original);
  });
});

describe('dispositions of the API-side codes', () => {
  const EXPECTED: Partial<Record<ErrorCode, Disposition>> = {
    API_REJECTED: 'dead-letter',
    API_NOT_FOUND: 'retry',
    API_UNAUTHORIZED: 'pause',
    API_RATE_LIMITED: 'rate-limited',
    API_UNAVAILABLE: 'retry',
    NETWORK: 'retry',
    TIMEOUT: 'retry',
  };
  it('has a row here for every API_/NETWORK/TIMEOUT code', () => {
    const apiSide = ERROR_CODES.filter((code) => /^(API_|NETWORK|TIMEOUT)/.test(code));
    expect(Object.keys(EXPECTED).sort()).toEqual([...apiSide].sort());
  });
  it.each(Object.entries(EXPECTED))('%s → %s', (code, disposition) => {
    expect(DISPOSITIONS[code as ErrorCode]).toBe(disposition);
    expect(new SyncError(code as ErrorCode, 'x').disposition).toBe(disposition);
  });
});
