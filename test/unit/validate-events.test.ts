import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SyncError } from '../../src/errors.js';
import { renderReason } from '../../src/i18n/reason.js';
import { checkDeliveryId, checkEventRecord, eventsFormatOf, isIgnoredName, parseEventAt, parseEventsFile, parseSpoolName } from '../../src/validate/index.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/events/${name}`, import.meta.url), 'utf8');
const LINE = { maxLineBytes: 4096 };

describe('parseEventAt', () => {
  const accepted: Array<[string, string, string]> = [
    ['2026-03-01T12:00:00Z', '2026-03-01T12:00:00Z', '2026-03-01T12:00:00.000Z'],
    ['2026-03-01T09:00:00-03:00', '2026-03-01T12:00:00Z', '2026-03-01T12:00:00.000Z'],
    ['2026-03-01T17:30+0530', '2026-03-01T12:00:00Z', '2026-03-01T12:00:00.000Z'],
    ['2026-03-01t12:00:00.500z', '2026-03-01T12:00:00.5Z', '2026-03-01T12:00:00.500Z'],
    ['2026-03-01T12:00:00.123456789+00:00', '2026-03-01T12:00:00.123456789Z', '2026-03-01T12:00:00.123456789Z'],
    ['2026-03-01T12:00:00.1234-00:00', '2026-03-01T12:00:00.1234Z', '2026-03-01T12:00:00.1234Z'],
    ['2026-03-01T00:30:00+01:00', '2026-02-28T23:30:00Z', '2026-02-28T23:30:00.000Z'],
    ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
    ['0050-06-01T00:00:00Z', '0050-06-01T00:00:00Z', '0050-06-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999999999Z', '9999-12-31T23:59:59.999999999Z', '9999-12-31T23:59:59.999999999Z'],
    ['2026-03-01T12:00:00-18:00', '2026-03-02T06:00:00Z', '2026-03-02T06:00:00.000Z'],
  ];
  for (const [text, instantKey, wire] of accepted) {
    it(`${text} → key ${instantKey}, wire ${wire}`, () => {
      const parsed = parseEventAt(text);
      expect(parsed).toEqual({ instantKey, epochMs: Date.parse(wire.replace(/(\.\d{3})\d+Z$/, '$1Z')), wire });
    });
  }

  const refused: Array<[string, RegExp]> = [
    ['2026-03-01T12:00:00', /no UTC offset; add Z or ±hh:mm/],
    ['2026-03-01 12:00:00Z', /not an ISO 8601 date-time/],
    ['2026-02-29T12:00:00Z', /day 29/],
    ['2026-04-31T12:00:00Z', /day 31/],
    ['2026-13-01T12:00:00Z', /month 13/],
    ['2026-03-01T24:00:00Z', /hour 24/],
    ['2026-03-01T12:60:00Z', /minute 60/],
    ['2026-03-01T12:00:60Z', /second 60/],
    ['2026-03-01T12:00:00+18:30', /at most ±18:00/],
    ['2026-03-01T12:00:00+05:60', /at most ±18:00/],
    ['2026-03-01T12:00:00.1234567890Z', /not an ISO 8601/],
    ['0000-01-01T00:00:00+01:00', /outside the years 0000–9999/],
    ['10000-01-01T00:00:00Z', /not an ISO 8601/],
    ['', /not an ISO 8601/],
  ];
  for (const [text, message] of refused) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      const parsed = parseEventAt(text);
      expect(parsed).toBeInstanceOf(SyncError);
      if (parsed instanceof SyncError) {
        expect(parsed.code).toBe('EVENT_BAD_TIME');
        expect(parsed.message).toMatch(message);
      }
    });
  }
});

describe('checkEventRecord and checkDeliveryId', () => {
  it('keeps event_at as given and adds key, epoch and wire form; extra fields are ignored', () => {
    const verdict = checkEventRecord({ delivery_id: 'dlv_1-A', event_at: '2026-03-01T09:00:00-03:00', note: 'x' });
    expect(verdict).toEqual({
      ok: true,
      value: {
        deliveryId: 'dlv_1-A',
        eventAt: '2026-03-01T09:00:00-03:00',
        instantKey: '2026-03-01T12:00:00Z',
        epochMs: Date.parse('2026-03-01T12:00:00Z'),
        wire: '2026-03-01T12:00:00.000Z',
      },
      warnings: [],
      warningReasons: [],
    });
  });

  const refused: Array<[unknown, string]> = [
    [null, 'EVENT_BAD_RECORD'],
    [['dlv', '2026-03-01T12:00:00Z'], 'EVENT_BAD_RECORD'],
    ['dlv', 'EVENT_BAD_RECORD'],
    [{ event_at: '2026-03-01T12:00:00Z' }, 'EVENT_BAD_RECORD'],
    [{ delivery_id: 7, event_at: '2026-03-01T12:00:00Z' }, 'EVENT_BAD_RECORD'],
    [{ delivery_id: 'dlv' }, 'EVENT_BAD_RECORD'],
    [{ delivery_id: 'a.b', event_at: '2026-03-01T12:00:00Z' }, 'EVENT_BAD_DELIVERY_ID'],
    [{ delivery_id: 'dlv', event_at: '2026-03-01T12:00:00' }, 'EVENT_BAD_TIME'],
  ];
  for (const [raw, code] of refused) {
    it(`refuses ${JSON.stringify(raw)} with ${code}`, () => {
      const verdict = checkEventRecord(raw);
      expect(verdict.ok ? 'accepted' : verdict.error.code).toBe(code);
    });
  }

  it('allows 1–128 characters of letters, digits, _ and - in a delivery id', () => {
    for (const id of ['a', 'A-9_z', 'x'.repeat(128)]) expect(checkDeliveryId(id)).toBeNull();
    for (const id of ['', 'x'.repeat(129), 'a.b', 'a/b', 'a b', '..', 'ção']) {
      expect(checkDeliveryId(id)?.code).toBe('EVENT_BAD_DELIVERY_ID');
    }
  });
});

describe('parseEventsFile', () => {
  it('gives one dedup key to the same instant written in any offset or precision', () => {
    const { records, rejects } = parseEventsFile(fixture('events-mixed-offsets.ndjson'), 'ndjson', LINE);
    expect(rejects).toEqual([]);
    expect(records.map((r) => r.line)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(records.map((r) => r.instantKey))).toEqual(new Set(['2026-03-01T12:00:00Z']));
  });

  it('reports each bad NDJSON line by number and keeps the good ones (CRLF, blank lines)', () => {
    const { records, rejects } = parseEventsFile(fixture('events-bad-lines.jsonl'), 'ndjson', LINE);
    expect(records.map((r) => [r.line, r.deliveryId])).toEqual([
      [1, 'dlv-1'],
      [10, 'dlv-5'],
    ]);
    expect(rejects.map((r) => [r.line, r.code])).toEqual([
      [2, 'EVENT_BAD_TIME'],
      [3, 'EVENT_BAD_RECORD'],
      [6, 'EVENT_BAD_DELIVERY_ID'],
      [7, 'EVENT_BAD_RECORD'],
      [8, 'EVENT_BAD_TIME'],
      [9, 'EVENT_BAD_RECORD'],
    ]);
    expect(rejects[1]?.message).toMatch(/not valid JSON/);
  });

  it('refuses a line over maxLineBytes, counted in UTF-8 bytes, without losing the next one', () => {
    const long = JSON.stringify({ delivery_id: 'dlv-1', event_at: '2026-03-01T12:00:00Z', note: 'é'.repeat(40) });
    const text = `${long}\n{"delivery_id":"dlv-2","event_at":"2026-03-01T12:00:00Z"}`;
    const { records, rejects } = parseEventsFile(text, 'ndjson', { maxLineBytes: 100 });
    expect(rejects).toMatchObject([{ line: 1, code: 'EVENT_LINE_TOO_LONG', message: expect.stringMatching(/over the limit of 100/) }]);
    expect(records.map((r) => r.deliveryId)).toEqual(['dlv-2']);
  });

  it('reads CSV columns by header name in any order, with BOM, CRLF, quotes and extra columns', () => {
    const { records, rejects } = parseEventsFile(fixture('events-reordered-columns.csv'), 'csv', LINE);
    expect(records.map((r) => [r.line, r.deliveryId, r.instantKey])).toEqual([
      [2, 'dlv-10', '2026-03-01T12:00:00Z'],
      [3, 'dlv-11', '2026-03-01T12:00:00.5Z'],
      [6, 'dlv-13', '2026-03-01T13:00:00Z'],
    ]);
    expect(rejects.map((r) => [r.line, r.code])).toEqual([[5, 'EVENT_BAD_TIME']]);
  });

  it('rejects the whole CSV as line 1 when the header lacks a required column', () => {
    const { records, rejects } = parseEventsFile(fixture('events-missing-header.csv'), 'csv', LINE);
    expect(records).toEqual([]);
    expect(rejects).toMatchObject([{ line: 1, code: 'EVENT_BAD_RECORD', message: expect.stringMatching(/lacks delivery_id and event_at/) }]);
  });

  it.each([
    [';', 'delivery_id;event_at\r\ndlv-1;2026-11-22T04:46:26Z\r\n', ';'],
    ['a tab', 'delivery_id\tevent_at\ndlv-1\t2026-11-22T04:46:26Z\n', '\\t'],
    ['|', 'delivery_id|event_at\ndlv-1|2026-11-22T04:46:26Z\n', '|'],
  ])('a CSV header separated by %s: no record, and the reason names the separator it saw, in both languages (issue 44)', (_, text, shown) => {
    const { records, rejects } = parseEventsFile(text, 'csv', LINE);
    expect(records).toEqual([]);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]).toMatchObject({ line: 1, code: 'EVENT_BAD_RECORD' });
    expect(rejects[0]!.message.startsWith(`the header row is separated by '${shown}', not by commas`)).toBe(true);
    expect(renderReason('pt-BR', rejects[0]!.reason!).startsWith(`a linha de cabeçalho está separada por '${shown}', não por vírgulas`)).toBe(true);
  });

  it('an unclosed quote costs only its own line', () => {
    const { records, rejects } = parseEventsFile(fixture('events-unclosed-quote.csv'), 'csv', LINE);
    expect(records.map((r) => [r.line, r.deliveryId])).toEqual([
      [2, 'dlv-20'],
      [4, 'dlv-22'],
    ]);
    expect(rejects.map((r) => [r.line, r.code])).toEqual([[3, 'EVENT_BAD_RECORD']]);
  });

  it('reports a CSV row that lacks a column', () => {
    const { rejects } = parseEventsFile('delivery_id,event_at\ndlv-1\n', 'csv', LINE);
    expect(rejects).toMatchObject([{ line: 2, code: 'EVENT_BAD_RECORD', message: expect.stringMatching(/^1 field, the header has 2;/) }]);
  });

  it('refuses a CSV row with one field more than its header, though its first columns would read as a valid event (issue 13)', () => {
    const text = 'event_at,delivery_id\n2026-11-22T04:46:26.500Z,1bc3d76e-65b5-482e-a632-c8c9e1a6d22d,unexpected\n';
    const { records, rejects } = parseEventsFile(text, 'csv', LINE);
    expect(records).toEqual([]);
    expect(rejects).toMatchObject([{ line: 2, code: 'EVENT_BAD_RECORD', message: '3 fields, the header has 2; quote a value that holds a comma' }]);
  });

  it('reports rows wider or narrower than the header by line and keeps the others (BOM, CRLF, quoted commas, a multi-line field, an extra named column)', () => {
    const { records, rejects } = parseEventsFile(fixture('events-field-count-mismatch.csv'), 'csv', LINE);
    expect(records.map((r) => [r.line, r.deliveryId, r.instantKey])).toEqual([
      [2, 'dlv-30', '2026-03-01T12:00:00Z'],
      [5, 'dlv-32', '2026-03-01T12:02:00Z'],
      [9, 'dlv-34', '2026-03-01T12:04:00Z'],
    ]);
    expect(rejects).toMatchObject([
      { line: 3, code: 'EVENT_BAD_RECORD', message: expect.stringMatching(/^4 fields, the header has 3;/) },
      { line: 4, code: 'EVENT_BAD_RECORD', message: expect.stringMatching(/^4 fields, the header has 3;/) },
      { line: 7, code: 'EVENT_BAD_RECORD', message: expect.stringMatching(/^2 fields, the header has 3;/) },
    ]);
  });

  it('ignores columns the header names beyond delivery_id and event_at, in any order', () => {
    const text = 'driver_name,delivery_id,vehicle,event_at\nAna,dlv-40,ABC1D23,2026-03-01T12:00:00Z\n';
    const { records, rejects } = parseEventsFile(text, 'csv', LINE);
    expect(rejects).toEqual([]);
    expect(records.map((r) => [r.line, r.deliveryId, r.eventAt])).toEqual([[2, 'dlv-40', '2026-03-01T12:00:00Z']]);
  });

  it('counts a row against the header also when an unclosed quote makes the file be read line by line', () => {
    const text = 'delivery_id,event_at\ndlv-50,2026-03-01T12:00:00Z,extra\n"dlv-51,2026-03-01T12:01:00Z\ndlv-52,2026-03-01T12:02:00Z\ndlv-53\n';
    const { records, rejects } = parseEventsFile(text, 'csv', LINE);
    expect(records.map((r) => [r.line, r.deliveryId])).toEqual([[4, 'dlv-52']]);
    expect(rejects.map((r) => [r.line, r.message.slice(0, 28)])).toEqual([
      [2, '3 fields, the header has 2; '],
      [3, 'malformed CSV (Quote Not Clo'],
      [5, '1 field, the header has 2; g'],
    ]);
  });

  it('handles thousands of lines in one pass', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `dlv-${i},2026-03-01T12:00:${String(i % 60).padStart(2, '0')}Z`);
    const { records, rejects } = parseEventsFile(`delivery_id,event_at\n${lines.join('\n')}`, 'csv', LINE);
    expect([records.length, rejects.length, records.at(-1)?.line]).toEqual([5000, 0, 5001]);
  });

  it('knows the format from the extension', () => {
    expect(['a.ndjson', 'b.JSONL', 'c.csv', 'd.json', 'e.txt'].map(eventsFormatOf)).toEqual(['ndjson', 'ndjson', 'csv', null, null]);
  });
});

describe('spool names', () => {
  it('reads labels with and without an external id, and CT-e names', () => {
    const ok = (kind: 'labels' | 'cte', name: string) => {
      const verdict = parseSpoolName(kind, name);
      return verdict.ok ? verdict.value : verdict.error.message;
    };
    expect(ok('labels', 'dlv-1.pdf')).toEqual({ deliveryId: 'dlv-1', externalId: null });
    expect(ok('labels', 'dlv_1__ORD.2026-7.PDF')).toEqual({ deliveryId: 'dlv_1', externalId: 'ORD.2026-7' });
    expect(ok('labels', 'dlv__a__b.pdf')).toEqual({ deliveryId: 'dlv', externalId: 'a__b' });
    expect(ok('cte', 'DLV-9.Xml')).toEqual({ deliveryId: 'DLV-9', externalId: null });
    expect(ok('cte', 'dlv__x.xml')).toEqual({ deliveryId: 'dlv__x', externalId: null });
  });

  const refused: Array<['labels' | 'cte', string]> = [
    ['labels', 'dlv-1.xml'],
    ['labels', '.pdf'],
    ['labels', '__ext.pdf'],
    ['labels', 'dlv__.pdf'],
    ['labels', 'dlv__a..b.pdf'],
    ['labels', 'dlv__a b.pdf'],
    ['labels', 'a.b.pdf'],
    ['labels', `${'x'.repeat(129)}.pdf`],
    ['cte', 'dlv-1.pdf'],
    ['cte', 'dlv 1.xml'],
    ['cte', 'a/b.xml'],
  ];
  for (const [kind, name] of refused) {
    it(`refuses ${kind}/${name.slice(0, 40)} and says what the name should look like`, () => {
      const verdict = parseSpoolName(kind, name);
      expect(verdict.ok ? 'accepted' : verdict.error.code).toBe('SPOOL_BAD_NAME');
      if (!verdict.ok) expect(verdict.error.message).toMatch(kind === 'labels' ? /<delivery_id>__<external_id>\.pdf/ : /<delivery_id>\.xml/);
    });
  }

  it('ignores dot files and partial writes', () => {
    expect(['.x.pdf', 'a.pdf.tmp', 'a.PART', 'a.csv.Partial'].map(isIgnoredName)).toEqual([true, true, true, true]);
    expect(['a.pdf', 'tmp.csv', 'a.part.xml'].map(isIgnoredName)).toEqual([false, false, false]);
  });
});
