/**
 * Properties of the validators on random and mutated input: they never throw (always a verdict or a
 * SyncError), and they never accept what the API would refuse.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { PDFDocument } from 'pdf-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { SyncError } from '../../src/errors.js';
import { checkCte, checkEventRecord, checkLabel, parseEventAt, parseEventsFile } from '../../src/validate/index.js';

const RUNS = { numRuns: 150 };
const LIMIT = { maxBytes: 64 * 1024 };
const latin1 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('latin1');

/** What the API requires of a label (4.3): starts with %PDF, ends with %%EOF plus whitespace. */
function apiWouldTakeLabel(bytes: Uint8Array): boolean {
  const text = latin1(bytes);
  // What we send ends at %%EOF and at most one line end (the API wants the file to END with %%EOF).
  return /^%PDF-\d\.\d/.test(text) && /%%EOF(\r\n|\r|\n)?$/.test(text);
}

describe('checkLabel properties', () => {
  let valid: Uint8Array;
  beforeAll(async () => {
    const document = await PDFDocument.create({ updateMetadata: false });
    document.addPage([288, 432]);
    valid = await document.save({ useObjectStreams: false });
  });

  async function judge(bytes: Uint8Array): Promise<void> {
    const verdict = await checkLabel(bytes, LIMIT);
    if (!verdict.ok) {
      expect(verdict.error).toBeInstanceOf(SyncError);
      return;
    }
    // What is sent is the file cut after %%EOF: the API takes it, and only padding was cut.
    const sent = verdict.value.pdf;
    expect(apiWouldTakeLabel(sent)).toBe(true);
    expect(Buffer.from(bytes.subarray(0, sent.length)).equals(Buffer.from(sent))).toBe(true);
    expect([...bytes.subarray(sent.length)].every((byte) => [0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20].includes(byte))).toBe(true);
  }

  it('never throws on random bytes, with or without a PDF header', async () => {
    const tail = fc.uint8Array({ maxLength: 300 });
    const input = fc.oneof(
      tail,
      tail.map((rest) => new Uint8Array([...Buffer.from('%PDF-1.4\n'), ...rest, ...Buffer.from('\n%%EOF\n')])),
    );
    await fc.assert(fc.asyncProperty(input, judge), RUNS);
  });

  it('never accepts a mutated PDF the API would refuse (bit flips, truncation, junk before or after)', async () => {
    const mutation = fc.oneof(
      fc.array(fc.record({ at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }), { minLength: 1, maxLength: 4 }).map((flips) => (bytes: Uint8Array) => {
        const copy = bytes.slice();
        for (const { at, bit } of flips) copy[at % copy.length] = (copy[at % copy.length] ?? 0) ^ (1 << bit);
        return copy;
      }),
      fc.nat().map((cut) => (bytes: Uint8Array) => bytes.slice(0, cut % bytes.length)),
      fc.uint8Array({ minLength: 1, maxLength: 40 }).map((junk) => (bytes: Uint8Array) => new Uint8Array([...junk, ...bytes])),
      fc.uint8Array({ minLength: 1, maxLength: 40 }).map((junk) => (bytes: Uint8Array) => new Uint8Array([...bytes, ...junk])),
    );
    await fc.assert(
      fc.asyncProperty(mutation, (mutate) => judge(mutate(valid))),
      { numRuns: 300 },
    );
  });
});

/** The 7 contract fields (4.2) of an accepted CT-e, as the API would look for them. */
function apiWouldTakeCte(
  value: { cUF: string; nCT: string; dhEmi: string; emitCnpj: string; vTPrest: string; destDocument: { value: string } },
  xml: string,
): boolean {
  const filled = [value.cUF, value.nCT, value.dhEmi, value.emitCnpj, value.vTPrest, value.destDocument.value].every((field) => field !== '');
  return filled && xml.includes('infCte') && /^\d{2}$/.test(value.cUF) && /[+-]\d{2}:\d{2}$|Z$/.test(value.dhEmi) && !/<!DOCTYPE|<!ENTITY/i.test(xml);
}

describe('checkCte properties', () => {
  const valid = readFileSync(new URL('../fixtures/cte/cte-valid-cteproc.xml', import.meta.url), 'utf8');
  const pieces = fc.constantFrom(
    '<',
    '>',
    '&',
    '&amp;',
    '</ide>',
    '<dest>',
    '<!DOCTYPE x>',
    '<!ENTITY e "x">',
    ']]>',
    '"',
    '\u0000',
    'é',
    '<CPF>52998224725</CPF>',
    '00',
  );
  const mutation = fc.oneof(
    fc.tuple(fc.nat(), fc.nat({ max: 40 })).map(
      ([at, length]) =>
        (xml: string) =>
          xml.slice(0, at % xml.length) + xml.slice((at % xml.length) + length),
    ),
    fc.tuple(fc.nat(), fc.oneof(pieces, fc.string({ maxLength: 8 }))).map(
      ([at, text]) =>
        (xml: string) =>
          xml.slice(0, at % xml.length) + text + xml.slice(at % xml.length),
    ),
    fc.tuple(fc.constantFrom('cUF', 'nCT', 'dhEmi', 'CNPJ', 'vTPrest', 'mod'), fc.oneof(fc.string({ maxLength: 16 }), fc.stringMatching(/^\d{1,15}$/))).map(
      ([element, value]) =>
        (xml: string) =>
          xml.replace(new RegExp(`<${element}>[^<]*</${element}>`), `<${element}>${value}</${element}>`),
    ),
    fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })).map(([at, byte]) => (xml: string) => {
      const bytes = Buffer.from(xml, 'latin1');
      bytes[at % bytes.length] = byte;
      return bytes.toString('latin1');
    }),
  );

  it('never throws and never accepts a CT-e without its contract fields', () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.boolean(), (mutations, asLatin1) => {
        const xml = mutations.reduce((text, mutate) => mutate(text), valid);
        const verdict = checkCte(new Uint8Array(Buffer.from(xml, asLatin1 ? 'latin1' : 'utf8')), LIMIT);
        if (verdict.ok) expect(apiWouldTakeCte(verdict.value, verdict.value.xml)).toBe(true);
        else expect(verdict.error).toBeInstanceOf(SyncError);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on random text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        const verdict = checkCte(new Uint8Array(Buffer.from(text)), LIMIT);
        expect(verdict.ok || verdict.error instanceof SyncError).toBe(true);
      }),
      RUNS,
    );
  });
});

describe('event properties', () => {
  const instant = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2200, 0, 1) });
  const offsetMinutes = fc.integer({ min: -18 * 60, max: 18 * 60 });
  const subMs = fc.integer({ min: 0, max: 999_999 });

  function written(epochMs: number, subMillis: number, offset: number, precision: number): string {
    const local = new Date(epochMs + offset * 60_000).toISOString().slice(0, 19);
    const fraction = `${String(epochMs % 1000).padStart(3, '0')}${String(subMillis).padStart(6, '0')}`.slice(0, precision).padEnd(precision, '0');
    const sign = offset < 0 ? '-' : '+';
    const abs = Math.abs(offset);
    const zone = offset === 0 ? 'Z' : `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
    return `${local}${precision > 0 ? `.${fraction}` : ''}${zone}`;
  }

  it('gives the same instant the same key in any offset and precision', () => {
    fc.assert(
      fc.property(instant, subMs, offsetMinutes, offsetMinutes, (epochMs, sub, a, b) => {
        const first = parseEventAt(written(epochMs, sub, a, 9));
        const second = parseEventAt(written(epochMs, sub, b, 9));
        expect(first).not.toBeInstanceOf(SyncError);
        expect(second).toEqual(first);
        if (!(first instanceof SyncError)) expect(Date.parse(first.wire.replace(/(\.\d{3})\d*Z$/, '$1Z'))).toBe(first.epochMs);
      }),
      RUNS,
    );
  });

  it('never accepts an event without an offset or with a bad delivery id, and never throws', () => {
    const timeLike = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc
        .tuple(instant, offsetMinutes, fc.integer({ min: 0, max: 9 }), fc.string({ maxLength: 3 }), fc.nat({ max: 40 }))
        .map(([epochMs, offset, precision, junk, cut]) => {
          const text = written(epochMs - (epochMs % 1000), 0, offset, precision);
          return cut % 3 === 0 ? text.slice(0, cut) + junk + text.slice(cut) : text;
        }),
    );
    const idLike = fc.oneof(fc.string({ maxLength: 20 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/), fc.constantFrom('', '../x', 'a.b', 'x'.repeat(129)));
    fc.assert(
      fc.property(fc.record({ delivery_id: fc.oneof(idLike, fc.integer()), event_at: fc.oneof(timeLike, fc.constant(null)) }), (raw) => {
        const verdict = checkEventRecord(raw);
        if (!verdict.ok) {
          expect(verdict.error).toBeInstanceOf(SyncError);
          return;
        }
        expect(verdict.value.deliveryId).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
        expect(verdict.value.eventAt).toMatch(/([Zz]|[+-]\d{2}:?\d{2})$/);
        expect(verdict.value.instantKey).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,8}[1-9])?Z$/);
      }),
      { numRuns: 400 },
    );
  });

  it('accounts for every non-blank line of a random events file exactly once', () => {
    const line = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc
        .record({ delivery_id: fc.string({ maxLength: 6 }), event_at: fc.constantFrom('2026-03-01T12:00:00Z', '2026-03-01T12:00:00', 'x') })
        .map((raw) => JSON.stringify(raw)),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), fc.constantFrom('ndjson' as const, 'csv' as const), (lines, format) => {
        const text = format === 'csv' ? ['delivery_id,event_at', ...lines].join('\n') : lines.join('\n');
        const { records, rejects } = parseEventsFile(text, format, { maxLineBytes: 50 });
        const seen = [...records.map((r) => r.line), ...rejects.map((r) => r.line)];
        expect(new Set(seen).size).toBe(seen.length);
        for (const record of records) expect(record.deliveryId).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
        if (format === 'ndjson') {
          const nonBlank = lines.flatMap((l) => l.split(/\r\n|\n|\r/)).filter((l) => l.trim() !== '').length;
          expect(seen.length).toBe(nonBlank);
        }
      }),
      RUNS,
    );
  });
});
