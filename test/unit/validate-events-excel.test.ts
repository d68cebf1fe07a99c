/**
 * Events files as a warehouse's tools write them (issue 45): Excel's `;`-separated CSV in
 * Windows-1252 or UTF-8 with a BOM, CRLF line ends, and timestamps written without an offset
 * (`dd/mm/aaaa HH:mm[:ss]`, ISO 8601 without one) read in the configured warehouse zone.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SyncError } from '../../src/errors.js';
import { decodeEventsBytes, parseEventAt, parseEventsFile } from '../../src/validate/index.js';
import { csvSeparatorOf } from '../../src/validate/events-text.js';
import { instantOfWallTime, isTimeZone } from '../../src/validate/time-zone.js';

const bytesOf = (name: string): Buffer => readFileSync(new URL(`../fixtures/events/${name}`, import.meta.url));
const SAO_PAULO = { maxLineBytes: 4096, timeZone: 'America/Sao_Paulo' };
const NO_ZONE = { maxLineBytes: 4096 };

describe('Excel fixtures are what Excel writes', () => {
  it('excel-semicolon-cp1252.csv: Windows-1252 (ç = E7, ã = E3, not valid UTF-8), `;`, CRLF on every line', () => {
    const bytes = bytesOf('excel-semicolon-cp1252.csv');
    expect([...bytes.subarray(0, 3)]).not.toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.includes(Buffer.from([0x61, 0xe7, 0xe3, 0x6f]))).toBe(true); // "ação"'s tail in Windows-1252
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes)).toThrow();
    const text = bytes.toString('latin1');
    expect(text.split('\r\n')).toHaveLength(4);
    expect(text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
  });

  it('excel-utf8-bom.csv: a UTF-8 BOM, `;`, CRLF', () => {
    const bytes = bytesOf('excel-utf8-bom.csv');
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.toString('utf8').replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
  });
});

describe('decodeEventsBytes and csvSeparatorOf', () => {
  it('reads Windows-1252 when the bytes are not UTF-8, drops a BOM, keeps UTF-8 as it is', () => {
    expect(decodeEventsBytes(Buffer.from([0x53, 0xe3, 0x6f]))).toBe('São');
    expect(decodeEventsBytes(Buffer.from('\uFEFFSão', 'utf8'))).toBe('São');
    expect(decodeEventsBytes(Buffer.from('São', 'utf8'))).toBe('São');
  });

  it('takes the separator from the header row', () => {
    expect(csvSeparatorOf('delivery_id;event_at;observação')).toBe(';');
    expect(csvSeparatorOf('delivery_id,event_at')).toBe(',');
    expect(csvSeparatorOf('"delivery_id";"event_at"')).toBe(';');
    // A comma inside a quoted `;`-separated header name does not fool it.
    expect(csvSeparatorOf('"nota, livre";delivery_id;event_at')).toBe(';');
    // Neither names both: the one the header holds more of.
    expect(csvSeparatorOf('id;quando;onde')).toBe(';');
    expect(csvSeparatorOf('id,when')).toBe(',');
  });
});

describe('an Excel CSV through parseEventsFile', () => {
  it('Windows-1252, `;`, CRLF, dd/mm/aaaa HH:mm[:ss] in America/Sao_Paulo: every row read, at -03:00', () => {
    const { records, rejects } = parseEventsFile(decodeEventsBytes(bytesOf('excel-semicolon-cp1252.csv')), 'csv', SAO_PAULO);
    expect(rejects).toEqual([]);
    expect(records.map((r) => [r.line, r.deliveryId, r.eventAt, r.wire])).toEqual([
      [2, 'dlv-excel-1', '01/03/2026 09:30', '2026-03-01T12:30:00.000Z'],
      [3, 'dlv-excel-2', '01/03/2026 14:05:30', '2026-03-01T17:05:30.000Z'],
    ]);
  });

  it('the same file without a zone: each row refused with the setting named, the header accepted', () => {
    const { records, rejects } = parseEventsFile(decodeEventsBytes(bytesOf('excel-semicolon-cp1252.csv')), 'csv', NO_ZONE);
    expect(records).toEqual([]);
    expect(rejects.map((r) => [r.line, r.code])).toEqual([
      [2, 'EVENT_BAD_TIME'],
      [3, 'EVENT_BAD_TIME'],
    ]);
    expect(rejects[0]?.message).toMatch(/has no UTC offset; add Z or ±hh:mm, or set CARRIER_SYNC_EVENTS_TIME_ZONE \(e\.g\. America\/Sao_Paulo\)/);
  });

  it('UTF-8 with a BOM, `;`, CRLF: an offset is kept, a local ISO time is read in the zone', () => {
    const { records, rejects } = parseEventsFile(decodeEventsBytes(bytesOf('excel-utf8-bom.csv')), 'csv', SAO_PAULO);
    expect(rejects).toEqual([]);
    expect(records.map((r) => [r.line, r.deliveryId, r.wire])).toEqual([
      [2, 'dlv-bom-1', '2026-03-01T12:30:00.000Z'],
      [3, 'dlv-bom-2', '2026-03-01T17:05:00.000Z'],
    ]);
  });

  it('an NDJSON line without an offset is read in the zone too', () => {
    const { records } = parseEventsFile('{"delivery_id":"d1","event_at":"2026-07-01T08:00:00"}\r\n', 'ndjson', {
      maxLineBytes: 4096,
      timeZone: 'Europe/Lisbon',
    });
    expect(records.map((r) => r.wire)).toEqual(['2026-07-01T07:00:00.000Z']);
  });
});

describe('parseEventAt with a warehouse zone', () => {
  const zone = (timeZone: string) => ({ timeZone });
  const wire = (text: string, timeZone: string): string => {
    const parsed = parseEventAt(text, zone(timeZone));
    return parsed instanceof SyncError ? parsed.message : parsed.wire;
  };

  it('follows daylight saving: the same wall-clock time is an hour apart in summer and winter', () => {
    expect(wire('2026-01-15T12:00:00', 'America/New_York')).toBe('2026-01-15T17:00:00.000Z');
    expect(wire('2026-07-15T12:00:00', 'America/New_York')).toBe('2026-07-15T16:00:00.000Z');
    // São Paulo kept daylight saving until 2019: January 2018 was -02:00, July 2018 -03:00.
    expect(wire('15/01/2018 12:00', 'America/Sao_Paulo')).toBe('2018-01-15T14:00:00.000Z');
    expect(wire('15/07/2018 12:00', 'America/Sao_Paulo')).toBe('2018-07-15T15:00:00.000Z');
  });

  it('refuses a time the clocks skipped, and takes the earlier of a repeated hour', () => {
    // New York, 2026-03-08: 02:00 became 03:00.
    expect(wire('2026-03-08T02:30:00', 'America/New_York')).toMatch(/never happened in America\/New_York: the clocks skipped that hour/);
    // New York, 2026-11-01: 01:00–01:59 happened twice (-04:00, then -05:00).
    expect(wire('2026-11-01 01:30', 'America/New_York')).toBe('2026-11-01T05:30:00.000Z');
  });

  it('keeps a fraction and reads a one-digit day, month and hour', () => {
    expect(wire('2026-03-01T09:30:00.25', 'America/Sao_Paulo')).toBe('2026-03-01T12:30:00.250Z');
    expect(wire('1/3/2026 9:30', 'America/Sao_Paulo')).toBe('2026-03-01T12:30:00.000Z');
  });

  it('an explicit offset wins over the zone', () => {
    expect(wire('2026-03-01T09:30:00+01:00', 'America/Sao_Paulo')).toBe('2026-03-01T08:30:00.000Z');
  });

  it('checks the calendar of a day-first date, and refuses a day-first date without a zone naming the setting', () => {
    expect(wire('31/04/2026 10:00', 'America/Sao_Paulo')).toMatch(/day 31/);
    expect(wire('01/13/2026 10:00', 'America/Sao_Paulo')).toMatch(/month 13/);
    const parsed = parseEventAt('01/03/2026 09:30');
    expect(parsed instanceof SyncError ? parsed.message : 'accepted').toMatch(/no UTC offset.*CARRIER_SYNC_EVENTS_TIME_ZONE/);
  });

  it('still refuses a space with an offset, which is neither ISO 8601 nor a spreadsheet time', () => {
    expect(wire('2026-03-01 12:00:00Z', 'America/Sao_Paulo')).toMatch(/not an ISO 8601/);
  });

  it('knows a zone from a typo, and converts any wall time it is given', () => {
    expect(isTimeZone('America/Sao_Paulo')).toBe(true);
    expect(isTimeZone('America/Sao Paulo')).toBe(false);
    expect(instantOfWallTime('UTC', Date.UTC(2026, 2, 1, 12))).toBe(Date.UTC(2026, 2, 1, 12));
  });
});
