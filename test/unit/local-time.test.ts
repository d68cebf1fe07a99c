/**
 * Times a person reads are local with their UTC offset (the same instant, nothing guessed); long
 * internal numbers are cut for reading. The zone comes from TZ, which Node reads again when it changes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { localTime, shortened } from '../../src/i18n/local-time.js';

const saved = process.env['TZ'];
afterEach(() => {
  process.env['TZ'] = saved;
});

describe('localTime', () => {
  it('writes the instant in the process time zone with its offset, to the second or the millisecond', () => {
    process.env['TZ'] = 'America/Sao_Paulo';
    expect(localTime('2026-11-25T08:46:59.848Z')).toBe('2026-11-25 05:46:59 -03:00');
    expect(localTime('2026-11-25T08:46:59.848Z', { ms: true })).toBe('2026-11-25 05:46:59.848 -03:00');
    expect(localTime('2026-11-25T01:00:00Z')).toBe('2026-11-24 22:00:00 -03:00');
    process.env['TZ'] = 'Asia/Kolkata';
    expect(localTime(Date.UTC(2026, 10, 25, 8, 46, 59))).toBe('2026-11-25 14:16:59 +05:30');
    process.env['TZ'] = 'UTC';
    expect(localTime('2026-11-25T08:46:59Z')).toBe('2026-11-25 08:46:59 +00:00');
  });

  it('keeps what is not a time as it came', () => {
    expect(localTime('?')).toBe('?');
  });
});

describe('shortened', () => {
  it('cuts a long value with an ellipsis and keeps a short one whole', () => {
    expect(shortened('ef65ef89df6d4ddda4d708910f65923b7f1aaa266f8674c391687b6f0470bfa6')).toBe('ef65ef89df6d…');
    expect(shortened('01795596408007414.01795596408141944')).toBe('017955964080…');
    expect(shortened('abc')).toBe('abc');
  });
});
