import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DISPOSITIONS, ERROR_CODES, SyncError } from '../../src/errors.js';

const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

describe('error codes', () => {
  it('has a disposition for every code, and local refusals are never sent', () => {
    for (const code of ERROR_CODES) expect(DISPOSITIONS[code], code).toBeDefined();
    for (const code of ERROR_CODES.filter((c) => /^(LABEL|CTE|EVENT|SPOOL)_/.test(c))) expect(DISPOSITIONS[code], code).toBe('reject-local');
    expect(DISPOSITIONS.API_UNAUTHORIZED).toBe('pause');
    expect(DISPOSITIONS.API_RATE_LIMITED).toBe('rate-limited');
    expect(DISPOSITIONS.API_REJECTED).toBe('dead-letter');
    for (const code of ['API_UNAVAILABLE', 'NETWORK', 'TIMEOUT', 'API_NOT_FOUND'] as const) expect(DISPOSITIONS[code], code).toBe('retry');
  });

  it('lists every code in the error table of docs/operations.md', () => {
    for (const code of ERROR_CODES) expect(operations, code).toContain(`| \`${code}\` |`);
  });

  it('takes its disposition from the table unless the thrower knows better', () => {
    expect(new SyncError('NETWORK', 'x').disposition).toBe('retry');
    expect(new SyncError('API_NOT_FOUND', 'x', { disposition: 'dead-letter' }).disposition).toBe('dead-letter');
    expect(new SyncError('API_REJECTED', 'x', { status: 400, apiCode: 'UNAUTHORIZED' }).toJSON()).toMatchObject({
      code: 'API_REJECTED',
      status: 400,
      apiCode: 'UNAUTHORIZED',
    });
  });
});
