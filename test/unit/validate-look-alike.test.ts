/**
 * Files that are not what their inbox wants, named in their refusal: a `.pdf` that is a thermal
 * printer's label, an image, an archive, an Office document or a web page; a CT-e inbox file that
 * is an NF-e, an MDF-e or an event. Each refusal names what the file is and what to do, and
 * carries the look-alike's id (`params.lookAlike`) for translations.
 */
import { describe, expect, it } from 'vitest';
import { checkCte, checkLabel } from '../../src/validate/index.js';
import { zipWith } from '../support/builders.js';

const LIMIT = { maxBytes: 1024 * 1024 };
const bytes = (...parts: Array<string | number[]>): Uint8Array =>
  new Uint8Array(Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part)))));

const EPL = ['', 'N', 'q812', 'Q1218,24', 'A50,50,0,4,1,1,N,"SHIP TO: ACME"', 'B50,120,0,1,3,7,100,B,"1Z999AA10123456784"', 'P1', ''].join('\n');

describe('a .pdf that is something else: LABEL_NOT_PDF naming it', () => {
  const rows: Array<{ what: string; file: Uint8Array; lookAlike: string; reason: RegExp }> = [
    {
      what: 'a ZPL label',
      file: bytes('^XA\n^FO50,50^A0N,40,40^FDSHIP TO^FS\n^XZ\n'),
      lookAlike: 'zpl',
      reason: /ZPL thermal-printer label .*not a PDF: export the label as PDF/,
    },
    { what: 'a ZPL label opening with ~ commands', file: bytes('CT~~CD,~CC^~CT~\n^XA~TA000~JSN^LT0\n^FO20,20^FDX^FS^XZ'), lookAlike: 'zpl', reason: /ZPL/ },
    { what: 'an EPL label', file: bytes(EPL), lookAlike: 'epl', reason: /EPL thermal-printer label, not a PDF: export the label as PDF/ },
    {
      what: 'a SOAP answer with the PDF inside as base64 (JVBERi0 is %PDF-)',
      file: bytes('<?xml version="1.0"?><soap:Envelope><soap:Body><etiqueta>JVBERi0xLjcKJeLjz9MK</etiqueta></soap:Body></soap:Envelope>'),
      lookAlike: 'xml-base64-pdf',
      reason: /XML message .* PDF inside as base64 text, not the PDF itself: decode the base64/,
    },
    {
      what: 'a PNG',
      file: bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'rest'),
      lookAlike: 'png',
      reason: /PNG image, not a PDF: print or export the label to PDF/,
    },
    { what: 'a JPEG', file: bytes([0xff, 0xd8, 0xff, 0xe0], 'JFIF'), lookAlike: 'jpeg', reason: /JPEG image/ },
    { what: 'a little-endian TIFF', file: bytes([0x49, 0x49, 0x2a, 0x00, 8, 0, 0, 0]), lookAlike: 'tiff', reason: /TIFF image/ },
    { what: 'a big-endian TIFF', file: bytes([0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8]), lookAlike: 'tiff', reason: /TIFF image/ },
    { what: 'a ZIP', file: zipWith('label.pdf'), lookAlike: 'zip', reason: /ZIP archive, not a PDF: unpack it and drop the PDF/ },
    {
      what: 'a Word document (OOXML)',
      file: zipWith('[Content_Types].xml'),
      lookAlike: 'office-zip',
      reason: /Office document .*not a PDF: save or export it as PDF/,
    },
    { what: 'an Excel workbook (OOXML, entry first)', file: zipWith('xl/workbook.xml'), lookAlike: 'office-zip', reason: /Office document/ },
    {
      what: 'an older Office document (OLE2)',
      file: bytes([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], '\0'.repeat(64)),
      lookAlike: 'office-ole2',
      reason: /older Office document/,
    },
    {
      what: 'an HTML page',
      file: bytes('\xEF\xBB\xBF\n<!DOCTYPE html>\n<html><body>label</body></html>'),
      lookAlike: 'html',
      reason: /HTML web page, not a PDF: print the page to PDF/,
    },
    { what: 'an HTML fragment', file: bytes('<html lang="pt-BR"><head><title>Etiqueta</title></head></html>'), lookAlike: 'html', reason: /HTML/ },
  ];
  for (const row of rows) {
    it(`${row.what} → LABEL_NOT_PDF (${row.lookAlike})`, async () => {
      const verdict = await checkLabel(row.file, LIMIT);
      expect(verdict.ok).toBe(false);
      if (verdict.ok) return;
      expect(verdict.error.code).toBe('LABEL_NOT_PDF');
      expect(verdict.error.message).toMatch(row.reason);
      expect(verdict.error.params).toEqual({ lookAlike: row.lookAlike });
    });
  }

  it('says only "not a PDF" for text it does not recognise', async () => {
    const verdict = await checkLabel(bytes('oops'), LIMIT);
    expect(!verdict.ok && verdict.error.message).toMatch(/^this is not a PDF \(no %PDF- header\)/);
    expect(!verdict.ok && verdict.error.params).toBeUndefined();
  });
});

describe('a CT-e inbox file that is another fiscal document: CTE_NOT_CTE naming it', () => {
  const rows: Array<{ root: string; lookAlike: string; reason: RegExp }> = [
    { root: 'nfeProc', lookAlike: 'nfe', reason: /<nfeProc> is an NF-e .*not a CT-e: drop the CT-e/ },
    { root: 'NFe', lookAlike: 'nfe', reason: /<NFe> is an NF-e/ },
    { root: 'procEventoNFe', lookAlike: 'nfe-event', reason: /is an NF-e event, not a CT-e/ },
    { root: 'mdfeProc', lookAlike: 'mdfe', reason: /<mdfeProc> is an MDF-e \(a cargo manifest, modelo 58\), not a CT-e/ },
    { root: 'MDFe', lookAlike: 'mdfe', reason: /MDF-e/ },
    { root: 'procEventoMDFe', lookAlike: 'mdfe-event', reason: /is an MDF-e event/ },
    { root: 'procEventoCTe', lookAlike: 'cte-event', reason: /is a CT-e event .*not a CT-e: drop the CT-e itself/ },
    { root: 'eventoCTe', lookAlike: 'cte-event', reason: /CT-e event/ },
    { root: 'root', lookAlike: 'other', reason: /<root> is not a CT-e/ },
  ];
  for (const row of rows) {
    it(`<${row.root}> → CTE_NOT_CTE (${row.lookAlike})`, () => {
      const verdict = checkCte(bytes(`<?xml version="1.0" encoding="UTF-8"?><${row.root} versao="4.00"><inf/></${row.root}>`), LIMIT);
      expect(verdict.ok).toBe(false);
      if (verdict.ok) return;
      expect(verdict.error.code).toBe('CTE_NOT_CTE');
      expect(verdict.error.message).toMatch(row.reason);
      expect(verdict.error.params).toEqual({ lookAlike: row.lookAlike, root: row.root });
    });
  }
});

describe('a web service answer saved whole (issue 45): named in one round, not "bytes precede" then "trailing data"', () => {
  const pdf = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF';
  const boundary = '--uuid:0f3c2a1b-9d8e-4f7a-b6c5-d4e3f2a1b0c9';
  const head = `${boundary}\r\nContent-Type: application/xop+xml; type="text/xml"\r\n\r\n<soap:Envelope><soap:Body/></soap:Envelope>\r\n${boundary}\r\nContent-Type: application/pdf\r\nContent-ID: <label>\r\n\r\n`;

  it('a MIME multipart message holding a PDF part names it and where the PDF part lies', async () => {
    const verdict = await checkLabel(bytes(head, pdf, `\r\n${boundary}--\r\n`), LIMIT);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.params).toMatchObject({ lookAlike: 'mime-multipart' });
    expect(verdict.error.message).toContain(`from %PDF- at offset ${head.length} to the %%EOF that ends at offset ${head.length + pdf.length}`);
    expect(verdict.error.message).not.toMatch(/bytes precede/);
  });

  it('one whose PDF part has no %%EOF says the answer was cut short', async () => {
    const verdict = await checkLabel(bytes(head, pdf.replace('%%EOF', '')), LIMIT);
    expect(!verdict.ok && verdict.error.message).toMatch(/has no %%EOF: the answer was cut short/);
  });

  it('plain bytes before %PDF- (no MIME headers) keep their own reason', async () => {
    const verdict = await checkLabel(bytes('garbage line\n', pdf), LIMIT);
    expect(!verdict.ok && verdict.error.message).toMatch(/^13 bytes precede the %PDF- header/);
  });
});
