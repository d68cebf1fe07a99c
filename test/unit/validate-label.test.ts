import { readFileSync } from 'node:fs';
import { PDFDocument } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { checkLabel } from '../../src/validate/index.js';

const LIMIT = { maxBytes: 1024 * 1024 };
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../fixtures/labels/${name}`, import.meta.url)));
const latin1 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('latin1');
const bytesOf = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));

async function minimalPdf(pages = 1, useObjectStreams = false): Promise<Uint8Array> {
  const document = await PDFDocument.create({ updateMetadata: false });
  for (let page = 0; page < pages; page += 1) document.addPage([288, 432]);
  return document.save({ useObjectStreams });
}

describe('checkLabel on fixtures', () => {
  const rows: Array<{ file: string; code: ErrorCode | null; message?: RegExp }> = [
    { file: 'ok-minimal-4x6.pdf', code: null },
    { file: 'ok-whitespace-after-eof.pdf', code: null },
    { file: 'ok-data-uri.pdf', code: null },
    { file: 'bad-empty.pdf', code: 'LABEL_EMPTY' },
    { file: 'bad-no-eof.pdf', code: 'LABEL_TRUNCATED', message: /END with %%EOF/ },
    { file: 'bad-junk-before-header.pdf', code: 'LABEL_NOT_PDF', message: /^19 bytes precede the %PDF- header.*START with %PDF/ },
    { file: 'bad-junk-after-eof.pdf', code: 'LABEL_TRAILING_DATA', message: /19 bytes follow the last %%EOF and not all are padding.*END with %%EOF/ },
    { file: 'bad-header-no-version.pdf', code: 'LABEL_NOT_PDF', message: /%PDF-<digit>\.<digit>/ },
    { file: 'bad-not-pdf-png-signature.pdf', code: 'LABEL_NOT_PDF', message: /not a PDF/ },
    { file: 'bad-encrypted-trailer.pdf', code: 'LABEL_ENCRYPTED', message: /without a password/ },
    // Issue 45: an empty user password opens without asking; printing permitted, it is sent (the API asks only %PDF … %%EOF).
    { file: 'ok-encrypted-empty-password.pdf', code: null },
    {
      file: 'bad-encrypted-empty-password-no-print.pdf',
      code: 'LABEL_ENCRYPTED',
      message: /^the PDF is encrypted: it opens without a password, but its permissions forbid printing/,
    },
    // Issue 45: a SOAP/MIME answer saved whole is named as what it is, in one round, with where its PDF part is.
    {
      file: 'bad-soap-mime-multipart.pdf',
      code: 'LABEL_NOT_PDF',
      message:
        /^the file is a MIME multipart message .* from %PDF- at offset 600 to the %%EOF that ends at offset 9\d\d \(600 bytes of headers before it, \d+ bytes after it\)$/,
    },
    { file: 'bad-soap-base64.pdf', code: 'LABEL_NOT_PDF', message: /^the file is an XML message .* with the PDF inside as base64 text/ },
    // Issue 45: the parser's words (and its closing parenthesis) stay out of the reason.
    {
      file: 'bad-unclosed-dictionary.pdf',
      code: 'LABEL_UNREADABLE',
      message: /^the PDF structure cannot be read at byte \d+; re-export or re-save the label$/,
    },
    { file: 'bad-no-pages.pdf', code: 'LABEL_UNREADABLE', message: /no pages/ },
    { file: 'bad-data-uri-not-base64.pdf', code: 'LABEL_NOT_PDF', message: /not valid base64/ },
  ];
  for (const row of rows) {
    it(`${row.file} → ${row.code ?? 'accepted'}`, async () => {
      const verdict = await checkLabel(fixture(row.file), LIMIT);
      if (row.code === null) {
        expect(verdict.ok ? 'accepted' : verdict.error.message).toBe('accepted');
        return;
      }
      expect(verdict.ok).toBe(false);
      if (verdict.ok) return;
      expect(verdict.error.code).toBe(row.code);
      expect(verdict.error.disposition).toBe('reject-local');
      if (row.message !== undefined) expect(verdict.error.message).toMatch(row.message);
    });
  }
});

describe('checkLabel on PDFs built in code', () => {
  it('summarises version, page count and size of a pdf-lib document', async () => {
    const pdf = await minimalPdf(3);
    const verdict = await checkLabel(pdf, LIMIT);
    expect(verdict).toEqual({
      ok: true,
      value: { pdfVersion: '1.7', pageCount: 3, byteLength: pdf.length, pdf, paddingBytes: 0 },
      warnings: [],
      warningReasons: [],
    });
  });

  it('reads the version from the header, PDF 2.0 included', async () => {
    const verdict = await checkLabel(bytesOf(latin1(await minimalPdf()).replace('%PDF-1.7', '%PDF-2.0')), LIMIT);
    expect(verdict.ok && verdict.value.pdfVersion).toBe('2.0');
  });

  it('a data URI label is measured and summarised as the decoded PDF', async () => {
    const pdf = await minimalPdf();
    const uri = bytesOf(
      `data:application/pdf;base64,${Buffer.from(pdf)
        .toString('base64')
        .replace(/(.{76})/g, '$1\r\n')}`,
    );
    const verdict = await checkLabel(uri, LIMIT);
    expect(verdict.ok && verdict.value.byteLength).toBe(pdf.length);
  });

  it('refuses a label over maxBytes, raw or as a data URI, and says the limit', async () => {
    const pdf = await minimalPdf();
    const raw = await checkLabel(pdf, { maxBytes: pdf.length - 1 });
    expect(!raw.ok && raw.error.code).toBe('LABEL_TOO_LARGE');
    expect(!raw.ok && raw.error.message).toContain(String(pdf.length - 1));
    const uri = bytesOf(`data:application/pdf;base64,${Buffer.from(pdf).toString('base64')}`);
    const viaUri = await checkLabel(uri, { maxBytes: pdf.length - 1 });
    expect(!viaUri.ok && viaUri.error.code).toBe('LABEL_TOO_LARGE');
    expect((await checkLabel(pdf, { maxBytes: pdf.length })).ok).toBe(true);
  });

  it('accepts padding after %%EOF (NUL, space, tab, CR, LF, form feed) and sends the bytes cut after %%EOF and one line end', async () => {
    const pdf = latin1(await minimalPdf());
    const body = pdf.slice(0, pdf.lastIndexOf('%%EOF') + 5);
    const cases: Array<{ tail: string; kept: string }> = [
      { tail: '', kept: '' },
      { tail: '\n', kept: '\n' },
      { tail: '\r\n', kept: '\r\n' },
      { tail: '\r\r\n\t  ', kept: '\r' },
      { tail: `\n${'\0'.repeat(20_480)}`, kept: '\n' },
      { tail: '\0\0', kept: '' },
      { tail: '\f', kept: '' },
      { tail: '\n\f\n \t\0', kept: '\n' },
    ];
    for (const { tail, kept } of cases) {
      const verdict = await checkLabel(bytesOf(`${body}${tail}`), LIMIT);
      expect(verdict.ok ? 'accepted' : verdict.error.message, JSON.stringify(tail)).toBe('accepted');
      if (!verdict.ok) continue;
      expect(latin1(verdict.value.pdf), JSON.stringify(tail)).toBe(`${body}${kept}`);
      expect(verdict.value.paddingBytes, JSON.stringify(tail)).toBe(tail.length - kept.length);
      expect(verdict.value.byteLength).toBe(body.length + tail.length);
      expect(verdict.warnings, JSON.stringify(tail)).toEqual([]);
    }
  });

  it('still refuses anything but padding after %%EOF, naming the first other byte and where it is', async () => {
    const pdf = latin1(await minimalPdf());
    const body = pdf.slice(0, pdf.lastIndexOf('%%EOF') + 5);
    for (const tail of ['\n%comment\n', `\n${'\0'.repeat(100)}x`, '\u0001', '\n\0\0<html>']) {
      const verdict = await checkLabel(bytesOf(`${body}${tail}`), LIMIT);
      expect(!verdict.ok && verdict.error.code, JSON.stringify(tail)).toBe('LABEL_TRAILING_DATA');
      if (verdict.ok) continue;
      const offset = body.length + [...tail].findIndex((c) => !'\0 \t\r\n\f'.includes(c));
      expect(verdict.error.params).toMatchObject({ bytesAfterEof: tail.length, offset });
      expect(verdict.error.message).toMatch(/not all are padding/);
    }
  });

  it('sends a data-URI label decoded and cut after %%EOF', async () => {
    const pdf = latin1(await minimalPdf());
    const padded = Buffer.from(`${pdf}\n${'\0'.repeat(64)}`, 'latin1');
    const verdict = await checkLabel(bytesOf(`data:application/pdf;base64,${padded.toString('base64')}`), LIMIT);
    expect(verdict.ok && latin1(verdict.value.pdf)).toBe(`${pdf.slice(0, pdf.lastIndexOf('%%EOF') + 5)}\n`);
  });

  it('counts one leading byte in the singular', async () => {
    const verdict = await checkLabel(bytesOf(` ${latin1(await minimalPdf())}`), LIMIT);
    expect(!verdict.ok && verdict.error.message).toMatch(/^1 byte precede/);
  });

  it('finds /Encrypt in a cross-reference stream, and is not fooled by /EncryptMetadata', async () => {
    const streamed = latin1(await minimalPdf(1, true));
    expect(streamed).toMatch(/\/Type \/XRef/);
    const encrypted = await checkLabel(bytesOf(streamed.replace('/Type /XRef', '/Type /XRef /Encrypt 9 0 R')), LIMIT);
    expect(!encrypted.ok && encrypted.error.code).toBe('LABEL_ENCRYPTED');
    const metadataOnly = latin1(await minimalPdf()).replace(/trailer\s*<</, (m) => `${m} /EncryptMetadata false`);
    expect((await checkLabel(bytesOf(metadataOnly), LIMIT)).ok).toBe(true);
  });

  it('refuses a PDF whose objects pdf-lib cannot parse, with its reason shortened', async () => {
    const pdf = latin1(await minimalPdf());
    const broken = pdf.replace(/1 0 obj[\s\S]*?endobj/, '1 0 obj\n<< /Type /Catalog /Pages 2 0 R\nendobj');
    const verdict = await checkLabel(bytesOf(broken), LIMIT);
    expect(!verdict.ok && verdict.error.code).toBe('LABEL_UNREADABLE');
    expect(!verdict.ok && verdict.error.message.length).toBeLessThan(300);
  });

  it('says what is true of encryption: no password to open it (sent, with a warning), a password needed, or printing forbidden', async () => {
    const open = await checkLabel(fixture('ok-encrypted-empty-password.pdf'), LIMIT);
    expect(open.ok && open.warnings.join()).toMatch(/no password needed to open it/);
    const real = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../fixtures/real/pdf/${name}`, import.meta.url)));
    const needsPassword = await checkLabel(real('encrypted-aes256-r6-pdf20-password.pdf'), LIMIT);
    expect(!needsPassword.ok && needsPassword.error.message).toMatch(/^the PDF is encrypted with a password needed to open it/);
    const noPrint = await checkLabel(fixture('bad-encrypted-empty-password-no-print.pdf'), LIMIT);
    expect(!noPrint.ok && noPrint.error.message).not.toMatch(/without a password:/);
  });

  it('keeps parser text out of every label reason: no doubled parenthesis, no pdf-lib words', async () => {
    const verdict = await checkLabel(fixture('bad-unclosed-dictionary.pdf'), LIMIT);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.message).not.toMatch(/\)\)|Failed|line:|col:/);
    expect(String(verdict.error.params?.['parserError'] ?? '')).not.toBe('');
  });

  it('warns, without refusing, when startxref points nowhere', async () => {
    const pdf = latin1(await minimalPdf()).replace(/startxref\s+\d+/, 'startxref\n7');
    const verdict = await checkLabel(bytesOf(pdf), LIMIT);
    expect(verdict.ok && verdict.warnings.join()).toMatch(/startxref points to byte 7/);
  });
});
