import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { checkCte } from '../../src/validate/index.js';

const LIMIT = { maxBytes: 1024 * 1024 };
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../fixtures/cte/${name}`, import.meta.url)));
const VALID = Buffer.from(fixture('cte-valid-cteproc.xml')).toString('utf8');
const check = (xml: string | Uint8Array) => checkCte(typeof xml === 'string' ? new Uint8Array(Buffer.from(xml, 'utf8')) : xml, LIMIT);
/** The valid cteProc with one element's text replaced. */
const withValue = (element: string, value: string): string => VALID.replace(new RegExp(`<${element}>[^<]*</${element}>`), `<${element}>${value}</${element}>`);

function expectReject(verdict: ReturnType<typeof check>, code: ErrorCode, message?: RegExp): void {
  expect(verdict.ok ? 'accepted' : verdict.error.code).toBe(code);
  if (!verdict.ok && message !== undefined) expect(verdict.error.message).toMatch(message);
}

/** The policy calls (also written at the top of src/validate/cte.ts). */
describe('checkCte decisions', () => {
  const decisions: Array<{ decision: string; file: string; code: ErrorCode | null; message: RegExp }> = [
    {
      decision: 'a CT-e OS (modelo 67) has no dest, which the API requires: refused',
      file: 'cte-os-mod67-no-dest.xml',
      code: 'CTE_FIELD_MISSING',
      message: /CT-e OS \(modelo 67\).*cannot be sent/,
    },
    {
      decision: 'a protocol with cStat 101 means cancelled: refused',
      file: 'cte-cancelled-cstat-101.xml',
      code: 'CTE_CANCELLED',
      message: /cStat 101.*cannot document a delivery/,
    },
    { decision: 'a cancellation event (110111) in the cteProc: refused', file: 'cte-cancel-event-110111.xml', code: 'CTE_CANCELLED', message: /110111/ },
    { decision: 'DOCTYPE/ENTITY is refused before parsing, never expanded', file: 'cte-doctype-entity.xml', code: 'CTE_DOCTYPE', message: /DOCTYPE/ },
    {
      decision: 'dhEmi without an offset is refused: we never guess a timezone',
      file: 'cte-dhemi-without-offset.xml',
      code: 'CTE_FIELD_INVALID',
      message: /ide\/dhEmi "2026-03-01T09:30:00" has no UTC offset/,
    },
    { decision: 'the declared ISO-8859-1 encoding is honoured', file: 'cte-iso-8859-1.xml', code: null, message: /São João/ },
    {
      decision: 'undeclared non-UTF-8 bytes are refused, not replaced',
      file: 'cte-latin1-bytes-undeclared.xml',
      code: 'CTE_NOT_XML',
      message: /not valid UTF-8.*line 12/,
    },
    { decision: 'the 2026 alphanumeric CNPJ is accepted', file: 'cte-alphanumeric-cnpj.xml', code: null, message: /12ABC34501DE35/ },
  ];
  for (const row of decisions) {
    it(`${row.decision} (${row.file})`, () => {
      const verdict = check(fixture(row.file));
      if (row.code === null) {
        expect(verdict.ok ? verdict.value.xml : verdict.error.message).toMatch(row.message);
      } else expectReject(verdict, row.code, row.message);
    });
  }

  it('an all-zero CNPJ passes mod 11: accepted with a warning', () => {
    const verdict = check(VALID.replace('<CNPJ>11444777000161</CNPJ>', '<CNPJ>00000000000000</CNPJ>'));
    expect(verdict.ok && verdict.warnings).toEqual(['infCte/dest/CNPJ is all zeros: it passes the check digits but is no real company']);
  });

  it('a protocol status other than authorized (100/150) is a warning, not a verdict', () => {
    const verdict = check(VALID.replace('<cStat>100</cStat>', '<cStat>110</cStat>'));
    expect(verdict.ok && verdict.warnings).toEqual(["the protocol's cStat is 110, not an authorization (100 or 150)"]);
  });

  it('an access key that disagrees with ide, or has a bad check digit, is only a warning', () => {
    const verdict = check(withValue('nCT', '124').replace('1231123456789"', '1231123456780"'));
    expect(verdict.ok).toBe(true);
    expect(verdict.ok && verdict.warnings).toEqual([
      "the access key's nCT 000000123 differs from infCte/ide/nCT 124",
      "the access key's check digit 0 is wrong",
    ]);
  });
});

describe('checkCte summary', () => {
  it('returns the seven contract fields, model, version and access key of a valid cteProc', () => {
    const verdict = check(VALID);
    expect(verdict.ok && { ...verdict.value, xml: verdict.value.xml === VALID }).toEqual({
      xml: true,
      declaredEncoding: null,
      root: 'cteProc',
      model: '57',
      version: '4.00',
      cUF: '35',
      nCT: '123',
      dhEmi: '2026-03-01T09:30:00-03:00',
      emitCnpj: '11222333000181',
      vTPrest: '150.00',
      destDocument: { type: 'CNPJ', value: '11444777000161' },
      accessKey: '35260311222333000181570010000001231123456789',
    });
    expect(verdict.ok && verdict.warnings).toEqual([]);
  });

  it('reads dest/CPF and a bare <CTe>', () => {
    const verdict = check(fixture('cte-valid-bare-dest-cpf.xml'));
    expect(verdict.ok && [verdict.value.root, verdict.value.destDocument]).toEqual(['CTe', { type: 'CPF', value: '52998224725' }]);
  });

  it('strips a UTF-8 BOM and reads a UTF-16 file with its BOM', () => {
    const bom = check(new Uint8Array(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(VALID)])));
    expect(bom.ok && bom.value.xml.startsWith('<?xml')).toBe(true);
    const utf16 = VALID.replace('encoding="UTF-8"', 'encoding="UTF-16"');
    const verdict = check(new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(utf16, 'utf16le')])));
    expect(verdict.ok && verdict.value.nCT).toBe('123');
  });
});

describe('checkCte refusals', () => {
  const rows: Array<{ name: string; xml: () => string | Uint8Array; code: ErrorCode; message: RegExp }> = [
    { name: 'an empty file', xml: () => '', code: 'CTE_NOT_XML', message: /empty/ },
    { name: 'text that is not XML', xml: () => 'hello', code: 'CTE_NOT_XML', message: /line 1/ },
    { name: 'mismatched tags, with line and column', xml: () => fixture('cte-not-well-formed.xml'), code: 'CTE_NOT_XML', message: /line 12, column \d+/ },
    { name: 'an encoding we do not read', xml: () => VALID.replace('UTF-8', 'EBCDIC-US'), code: 'CTE_NOT_XML', message: /ebcdic-us/ },
    { name: 'a lone <!ENTITY> in a comment', xml: () => VALID.replace('<cteProc', '<!-- <!ENTITY x "y"> --><cteProc'), code: 'CTE_DOCTYPE', message: /ENTITY/ },
    { name: 'an event root', xml: () => '<procEventoCTe versao="3.00"><eventoCTe/></procEventoCTe>', code: 'CTE_NOT_CTE', message: /event/ },
    { name: 'a root named like an Object property', xml: () => '<isPrototypeOf><infCte/></isPrototypeOf>', code: 'CTE_NOT_CTE', message: /<isPrototypeOf>/ },
    { name: 'a cteProc without its CTe', xml: () => '<cteProc versao="4.00"><protCTe/></cteProc>', code: 'CTE_NOT_CTE', message: /holds no <CTe>/ },
    { name: 'a CTe without infCte', xml: () => '<CTe><Signature/></CTe>', code: 'CTE_FIELD_MISSING', message: /^infCte is missing/ },
    {
      name: 'a missing dest',
      xml: () => fixture('cte-missing-dest.xml'),
      code: 'CTE_FIELD_MISSING',
      message: /infCte\/dest\/CNPJ \(or dest\/CPF\) is missing/,
    },
    { name: 'an empty cUF', xml: () => withValue('cUF', ''), code: 'CTE_FIELD_MISSING', message: /infCte\/ide\/cUF is missing or empty/ },
    { name: 'cUF 01', xml: () => withValue('cUF', '01'), code: 'CTE_FIELD_INVALID', message: /infCte\/ide\/cUF "01" is not an IBGE state code/ },
    { name: 'cUF 34', xml: () => withValue('cUF', '34'), code: 'CTE_FIELD_INVALID', message: /"34"/ },
    { name: 'nCT all zeros', xml: () => withValue('nCT', '000'), code: 'CTE_FIELD_INVALID', message: /infCte\/ide\/nCT "000"/ },
    { name: 'nCT of 10 digits', xml: () => withValue('nCT', '1234567890'), code: 'CTE_FIELD_INVALID', message: /1–9 digits/ },
    { name: 'dhEmi on 30 February', xml: () => withValue('dhEmi', '2026-02-30T10:00:00-03:00'), code: 'CTE_FIELD_INVALID', message: /real calendar date/ },
    { name: 'dhEmi without seconds', xml: () => withValue('dhEmi', '2026-03-01T10:00-03:00'), code: 'CTE_FIELD_INVALID', message: /YYYY-MM-DDThh:mm:ss±hh:mm/ },
    { name: 'emit CNPJ with punctuation', xml: () => withValue('CNPJ', '11.222.333/0001-81'), code: 'CTE_FIELD_INVALID', message: /without dots/ },
    {
      name: 'emit CNPJ with a bad check digit',
      xml: () => withValue('CNPJ', '11222333000182'),
      code: 'CTE_FIELD_INVALID',
      message: /infCte\/emit\/CNPJ "11222333000182" has wrong check digits \(expected 81\)/,
    },
    { name: 'a lower-case alphanumeric CNPJ', xml: () => withValue('CNPJ', '12abc34501de35'), code: 'CTE_FIELD_INVALID', message: /upper case/ },
    { name: 'vTPrest with a comma', xml: () => withValue('vTPrest', '150,00'), code: 'CTE_FIELD_INVALID', message: /infCte\/vPrest\/vTPrest "150,00"/ },
    { name: 'vTPrest with 3 decimals', xml: () => withValue('vTPrest', '1.005'), code: 'CTE_FIELD_INVALID', message: /decimal/ },
    {
      name: 'dest CPF with bad check digits',
      xml: () => Buffer.from(fixture('cte-valid-bare-dest-cpf.xml')).toString().replace('52998224725', '52998224724'),
      code: 'CTE_FIELD_INVALID',
      message: /dest\/CPF "52998224724" has wrong check digits/,
    },
    {
      name: 'dest CPF of one repeated digit',
      xml: () => Buffer.from(fixture('cte-valid-bare-dest-cpf.xml')).toString().replace('52998224725', '11111111111'),
      code: 'CTE_FIELD_INVALID',
      message: /repeats one digit/,
    },
    {
      name: 'dest with both CNPJ and CPF',
      xml: () => VALID.replace('</CNPJ><xNome>Dest', '</CNPJ><CPF>52998224725</CPF><xNome>Dest'),
      code: 'CTE_FIELD_INVALID',
      message: /both CNPJ and CPF/,
    },
  ];
  for (const row of rows) {
    it(`${row.name} → ${row.code}`, () => expectReject(check(row.xml()), row.code, row.message));
  }

  it('lists every bad field in one message, with the first problem deciding the code', () => {
    const verdict = check(withValue('cUF', '99').replace('<vTPrest>150.00</vTPrest>', '<vTPrest></vTPrest>'));
    expectReject(verdict, 'CTE_FIELD_INVALID', /ide\/cUF "99".*vPrest\/vTPrest is missing or empty/);
    expect(!verdict.ok && verdict.error.params?.['problems']).toHaveLength(2);
  });

  it('refuses a file over maxBytes', () => {
    const verdict = checkCte(new Uint8Array(Buffer.from(VALID)), { maxBytes: 100 });
    expectReject(verdict, 'CTE_TOO_LARGE', /over the limit of 100/);
  });
});
