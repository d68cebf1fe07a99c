/**
 * A CT-e saved in another encoding than UTF-8 is sent as UTF-8 text, so its declaration must say
 * UTF-8 (libxml2 reads "UTF-16" over UTF-8 bytes as an error, "ISO-8859-1" as mojibake). Shown on
 * real files of test/fixtures/real: a signed cteProc transcoded to ISO-8859-1, windows-1252 and
 * UTF-16 LE/BE with a BOM comes out of checkCte (what the claim queues and the worker sends) byte
 * for byte the original, its signed CTe element (infCte and Signature) untouched; a CT-e with
 * accented names keeps them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkCte } from '../../src/validate/index.js';

const LIMIT = { maxBytes: 10 * 1024 * 1024 };
const real = (name: string): string => readFileSync(new URL(`../fixtures/real/cte/${name}`, import.meta.url), 'utf8');

type Saved = 'ISO-8859-1' | 'windows-1252' | 'UTF-16LE' | 'UTF-16BE';

/** The document as another tool would save it: its declaration names the encoding, its bytes are in it. */
function savedAs(xml: string, encoding: Saved): Uint8Array {
  const label = encoding.startsWith('UTF-16') ? 'UTF-16' : encoding;
  const text = xml.replace(/^(<\?xml[^?]*?encoding\s*=\s*)(["'])[^"']+\2/, `$1$2${label}$2`);
  expect(text).not.toBe(xml);
  if (encoding === 'UTF-16LE') return new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
  if (encoding === 'UTF-16BE') return new Uint8Array(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]));
  return new Uint8Array(Buffer.from(text, 'latin1'));
}

const ENCODINGS: Saved[] = ['ISO-8859-1', 'windows-1252', 'UTF-16LE', 'UTF-16BE'];
/** The signed element of a cteProc: CTe holds infCte (what is signed) and its Signature. */
const signedElement = (xml: string): string => /<CTe\b[\s\S]*<\/CTe>/.exec(xml)?.[0] ?? '';

describe('a transcoded CT-e is sent with a declaration that says UTF-8, nothing else changed', () => {
  const original = real('cteproc-v3.00-signed-dest-cnpj-authorized.xml');

  it('the real signed cteProc has its CTe element with infCte and a full Signature', () => {
    expect(original.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(signedElement(original)).toMatch(
      /^<CTe[\s\S]*<infCte [\s\S]*<\/infCte>\s*<Signature [\s\S]*<SignatureValue>[A-Za-z0-9+/=\s]{300,}<\/SignatureValue>/,
    );
  });

  for (const encoding of ENCODINGS) {
    it(`saved as ${encoding}: sent byte for byte as the original, the signed CTe element and its Signature untouched`, () => {
      const verdict = checkCte(savedAs(original, encoding), LIMIT);
      expect(verdict.ok ? 'accepted' : verdict.error.message).toBe('accepted');
      if (!verdict.ok) return;
      const sent = Buffer.from(verdict.value.xml, 'utf8');
      expect(verdict.value.declaredEncoding).toBe(encoding.startsWith('UTF-16') ? 'UTF-16' : encoding);
      expect(verdict.value.xml.slice(0, 60)).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>/);
      expect(Buffer.from(signedElement(verdict.value.xml), 'utf8').equals(Buffer.from(signedElement(original), 'utf8'))).toBe(true);
      expect(sent.equals(Buffer.from(original, 'utf8'))).toBe(true);
    });
  }

  it('keeps accented names of a real CT-e saved as ISO-8859-1 or UTF-16 (only the declaration differs from the UTF-8 original)', () => {
    const accented = real('cte-v4.00-bare-unsigned-modal-aereo.xml');
    const names = [...new Set(accented.match(/[^<>\s]*[À-ÿ][^<>\s]*/g) ?? [])];
    expect(names.length).toBeGreaterThan(0);
    for (const encoding of ENCODINGS) {
      const verdict = checkCte(savedAs(accented, encoding), LIMIT);
      expect(verdict.ok ? 'accepted' : verdict.error.message, encoding).toBe('accepted');
      if (!verdict.ok) continue;
      expect(verdict.value.xml, encoding).toBe(accented);
      for (const name of names) expect(verdict.value.xml, `${encoding}: ${name}`).toContain(name);
    }
  });

  it('leaves a UTF-8 declaration and one without an encoding as they are; keeps the quote style it rewrites', () => {
    const body = original.slice(original.indexOf('?>') + 2);
    const noEncoding = `<?xml version="1.0"?>${body}`;
    const plain = checkCte(new Uint8Array(Buffer.from(noEncoding, 'utf8')), LIMIT);
    expect(plain.ok && [plain.value.xml === noEncoding, plain.value.declaredEncoding]).toEqual([true, null]);
    const utf16NoEncoding = new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(noEncoding, 'utf16le')]));
    const fromUtf16 = checkCte(utf16NoEncoding, LIMIT);
    expect(fromUtf16.ok && fromUtf16.value.xml === noEncoding).toBe(true);
    const single = checkCte(new Uint8Array(Buffer.from(`<?xml version='1.0' encoding='iso-8859-1'?>${body}`, 'latin1')), LIMIT);
    expect(single.ok && single.value.xml.slice(0, 40)).toBe(`<?xml version='1.0' encoding='UTF-8'?>${body.slice(0, 2)}`);
    expect(single.ok && single.value.declaredEncoding).toBe('iso-8859-1');
  });
});
