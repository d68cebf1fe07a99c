/**
 * Every real CT-e XML and PDF of the project's shared fixtures (see their MANIFEST.md) with the
 * verdict our validators must give and why, and for an accepted file what is SENT (the sha256 of
 * the bytes the API gets, which differ from the file for a padded label or a transcoded CT-e).
 * The files are kept in test/fixtures/real (the shared ones copied unchanged from
 * ../shared/fixtures/real, more added below them in MANIFEST.md), so the verdicts are checked on
 * every clone; where ../shared is beside the repo, every shared file must be here byte for byte,
 * and a file there without a row fails the suite.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import { checkCte, checkLabel } from '../../src/validate/index.js';

interface Row {
  file: string;
  verdict: 'accept' | 'reject';
  code?: ErrorCode;
  /** A warning an accepted file must carry. */
  warning?: RegExp;
  /** What an accepted file sends, when it is not the file as it is: the sha256 of the bytes sent, and their last bytes. */
  sent?: { sha256: string; tail?: string };
  /** The look-alike a refusal names (`params.lookAlike`). */
  lookAlike?: string;
  why: string;
}

const LIMIT = { maxBytes: 10 * 1024 * 1024 };

const ROWS: Row[] = [
  // CT-e
  {
    file: 'cte/cteproc-v3.00-signed-dest-cnpj-authorized.xml',
    verdict: 'accept',
    warning: /dest\/CNPJ is all zeros/,
    why: 'all 7 fields valid; dest CNPJ 00000000000000 passes mod 11, so accepted with a warning',
  },
  {
    file: 'cte/cteproc-v3.00-signed-dest-cpf-with-proccanccte.xml',
    verdict: 'reject',
    code: 'CTE_CANCELLED',
    why: 'carries procCancCTe: a cancelled CT-e cannot document a delivery',
  },
  {
    file: 'cte/cteosproc-v3.00-mod67-signed-authorized.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_MISSING',
    why: 'CT-e OS (modelo 67) has no dest; the API requires dest/CNPJ|CPF',
  },
  { file: 'cte/cte-v3.00-bare-signed-single-line.xml', verdict: 'reject', code: 'CTE_FIELD_INVALID', why: 'emit/CNPJ 99999999999999 fails the check digits' },
  {
    file: 'cte/cte-v2.00-bare-signed-legacy-layout.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_INVALID',
    why: 'dhEmi 2012-10-02T16:13:00 has no UTC offset; we never guess a timezone',
  },
  {
    file: 'cte/cteproc-v4.00-unsigned-dest-cnpj.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_INVALID',
    why: 'cUF 01 is no IBGE state code; emit and dest CNPJ fail the check digits',
  },
  {
    file: 'cte/cteproc-v4.00-alphanumeric-cnpj.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_INVALID',
    why: 'cUF 01 is no IBGE state code (its alphanumeric CNPJs pass; see validate-cte.test.ts)',
  },
  {
    file: 'cte/cte-v4.00-bare-unsigned-modal-aereo.xml',
    verdict: 'accept',
    warning: /access key's nCT/,
    why: 'all 7 fields valid, +01:00 offset is fine; access key nCT 5741 vs ide 574 is a warning only',
  },
  {
    file: 'cte/cteos-v3.00-mod67-utf8-bom-unsigned.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_MISSING',
    why: 'CT-e OS (modelo 67) has no dest; reported before its bad emit CNPJ because no fix makes it sendable',
  },
  {
    file: 'cte/cte-v4.00-bare-signed-placeholder-signature.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_INVALID',
    why: 'emit/CNPJ 18760500000000 fails the check digits',
  },
  {
    file: 'cte/invalid-cte-v4.00-complemento-missing-ide-emit-vprest.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_MISSING',
    why: 'infCte holds no ide, emit, vPrest or dest',
  },
  { file: 'cte/invalid-cte-v4.00-infcte-without-id-empty.xml', verdict: 'reject', code: 'CTE_FIELD_MISSING', why: 'infCte is empty' },
  { file: 'cte/invalid-not-cte-root-element.xml', verdict: 'reject', code: 'CTE_NOT_CTE', lookAlike: 'other', why: 'root element <root> is not a CT-e' },
  {
    file: 'cte/invalid-cte-v4.00-xsd-placeholders-no-namespace.xml',
    verdict: 'reject',
    code: 'CTE_FIELD_INVALID',
    why: 'every value is the literal "string"; dest has both CNPJ and CPF',
  },
  {
    file: 'cte/not-cte-proceventocte-v3.00-cce.xml',
    verdict: 'reject',
    code: 'CTE_NOT_CTE',
    lookAlike: 'cte-event',
    why: 'procEventoCTe is an event (carta de correção), not a CT-e',
  },
  // Added for issue 30 (test/fixtures/real only; MANIFEST.md's last section).
  {
    file: 'cte/not-cte-nfeproc-v4.00-nfe-mod55.xml',
    verdict: 'reject',
    code: 'CTE_NOT_CTE',
    lookAlike: 'nfe',
    why: 'an NF-e (nfeProc, modelo 55), not a CT-e',
  },
  { file: 'cte/not-cte-mdfeproc-v3.00-mdfe.xml', verdict: 'reject', code: 'CTE_NOT_CTE', lookAlike: 'mdfe', why: 'an MDF-e (mdfeProc), not a CT-e' },
  {
    file: 'cte/not-cte-proceventonfe-cce.xml',
    verdict: 'reject',
    code: 'CTE_NOT_CTE',
    lookAlike: 'nfe-event',
    why: 'an NF-e event (carta de correção), not a CT-e',
  },
  {
    file: 'cte/transcoded-cte-v4.00-modal-aereo-iso-8859-1.xml',
    verdict: 'accept',
    warning: /access key's nCT/,
    sent: { sha256: '5135cd53645af1b8709851d1f1988e6d059c87bc5d0cc43e140560d0387874d8' },
    why: 'the aereo CT-e saved as ISO-8859-1: sent as the UTF-8 original, byte for byte (declaration says UTF-8, accented names intact)',
  },
  {
    file: 'cte/transcoded-cte-v4.00-modal-aereo-utf-16be-bom.xml',
    verdict: 'accept',
    warning: /access key's nCT/,
    sent: { sha256: '5135cd53645af1b8709851d1f1988e6d059c87bc5d0cc43e140560d0387874d8' },
    why: 'the aereo CT-e saved as UTF-16 BE with a BOM: sent as the UTF-8 original, byte for byte',
  },
  {
    file: 'cte/transcoded-cteproc-v3.00-signed-utf-16le-bom.xml',
    verdict: 'accept',
    warning: /dest\/CNPJ is all zeros/,
    sent: { sha256: '21fcd414de014ff23fa7389329d70f649755f686e9c63f8296fcd5905621ace7' },
    why: 'the signed cteProc saved as UTF-16 LE with a BOM: sent as the UTF-8 original, signed CTe element untouched',
  },
  // PDF
  { file: 'pdf/valid-pdf17-minimal-no-eol-after-eof.pdf', verdict: 'accept', why: 'valid; ending exactly at %%EOF with no EOL is fine' },
  { file: 'pdf/valid-dacte-a4-pdf14.pdf', verdict: 'accept', why: 'valid A4 DACTE' },
  { file: 'pdf/label-correios-100x140mm-4pages.pdf', verdict: 'accept', why: 'valid 4-page label' },
  { file: 'pdf/label-thermal-227x283pt-zpl-rendered.pdf', verdict: 'accept', why: 'valid thermal label; no EOL after %%EOF is fine' },
  {
    file: 'pdf/junk-before-header-encrypted-linearized.pdf',
    verdict: 'reject',
    code: 'LABEL_NOT_PDF',
    why: '14 bytes before %PDF: the API requires the file to start with %PDF (it is also encrypted)',
  },
  { file: 'pdf/junk-before-header-no-eof-empty-startxref.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', why: '29 bytes before %PDF (and no %%EOF)' },
  {
    file: 'pdf/junk-after-eof-comment-lines.pdf',
    verdict: 'reject',
    code: 'LABEL_TRAILING_DATA',
    why: '83 bytes of comment lines after the last %%EOF: the API requires the file to end with %%EOF',
  },
  {
    file: 'pdf/whitespace-after-eof-bad-startxref.pdf',
    verdict: 'accept',
    warning: /startxref points to byte 781/,
    sent: { sha256: '557d152c59cc561e9b1729e080fcbf9a3340f81930ae12a903eb20f5ba39531c', tail: '%%EOF\n' },
    why: 'only whitespace after %%EOF (sent without the 5 bytes after its LF); its wrong startxref is repaired by readers, so only a warning',
  },
  { file: 'pdf/pdf20-no-xref-no-trailer-no-eof.pdf', verdict: 'reject', code: 'LABEL_TRUNCATED', why: 'no %%EOF at all' },
  { file: 'pdf/no-eof-marker-truncated-to-percent.pdf', verdict: 'reject', code: 'LABEL_TRUNCATED', why: '%%EOF cut down to a single %' },
  { file: 'pdf/truncated-mid-stream-184-bytes.pdf', verdict: 'reject', code: 'LABEL_TRUNCATED', why: 'cut off inside a stream; no %%EOF' },
  { file: 'pdf/truncated-after-startxref-no-header.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', why: 'starts with 00000000, no %PDF header' },
  { file: 'pdf/incremental-updates-4-eof.pdf', verdict: 'accept', why: 'valid, 4 incremental sections, CR line ends' },
  { file: 'pdf/incremental-updates-3-eof-small.pdf', verdict: 'accept', why: 'valid, 3 incremental sections' },
  { file: 'pdf/encrypted-aes128-v4.pdf', verdict: 'reject', code: 'LABEL_ENCRYPTED', why: '/Encrypt in the trailer: must print without a password' },
  {
    file: 'pdf/encrypted-aes256-r6-pdf20-password.pdf',
    verdict: 'reject',
    code: 'LABEL_ENCRYPTED',
    why: '/Encrypt in the trailer (AES-256, needs a password)',
  },
  { file: 'pdf/linearized-minimal.pdf', verdict: 'accept', why: 'valid linearized PDF, 2x %%EOF' },
  { file: 'pdf/pdf20-valid-small.pdf', verdict: 'accept', why: 'valid PDF 2.0' },
  { file: 'pdf/not-pdf-text-oops.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', why: 'the text "oops"' },
  { file: 'pdf/no-pdf-header-binary-comment-first.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', why: 'PDF body without the %PDF- line' },
  { file: 'pdf/header-version-incomplete-no-xref.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', why: 'header %PDF-1. has no minor version digit' },
  // Added for issue 30 (test/fixtures/real only; MANIFEST.md's last section).
  {
    file: 'pdf/browser-printed-20480-nul-after-eof.pdf',
    verdict: 'accept',
    sent: { sha256: '2b9d0d2aa0b914fd242192a2c729f2024b5c60402fbf08f877b2cd8d4674e2f3', tail: 'startxref\n13427\n%%EOF\n' },
    why: '%%EOF, LF and 20,480 NUL bytes (pypdf issue 177, printed through Selenium): valid, sent as its first 14,054 bytes',
  },
  {
    file: 'pdf/zpl-usps-shipping-label-4x6-named-pdf.pdf',
    verdict: 'reject',
    code: 'LABEL_NOT_PDF',
    lookAlike: 'zpl',
    why: 'a ZPL 4x6 shipping label (^XA … ^XZ) named .pdf',
  },
  { file: 'pdf/png-image-named-pdf.pdf', verdict: 'reject', code: 'LABEL_NOT_PDF', lookAlike: 'png', why: 'a PNG image named .pdf' },
];

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no package.json above the test file');
    dir = parent;
  }
  return dir;
}

const REAL = resolve(repoRoot(), 'test/fixtures/real');
const SHARED = resolve(repoRoot(), '../shared/fixtures/real');
const listed = new Set(ROWS.map((row) => row.file));
const filesIn = (root: string): string[] =>
  ['pdf', 'cte'].flatMap((kind) => (existsSync(join(root, kind)) ? readdirSync(join(root, kind)).map((name) => `${kind}/${name}`) : []));

describe('real fixtures: every file has a row', () => {
  it(`every file under test/fixtures/real/{pdf,cte} has a verdict row, and every row its file`, () => {
    const present = filesIn(REAL);
    expect(present.filter((file) => !listed.has(file))).toEqual([]);
    expect([...listed].filter((file) => !present.includes(file))).toEqual([]);
  });

  it.skipIf(!existsSync(SHARED))(
    `every file of ${SHARED} is here byte for byte, its MANIFEST.md too, more added below it (a new shared fixture needs a row)`,
    () => {
      expect(filesIn(SHARED).filter((file) => !filesIn(REAL).includes(file))).toEqual([]);
      for (const file of filesIn(SHARED)) expect(readFileSync(join(REAL, file)).equals(readFileSync(join(SHARED, file))), file).toBe(true);
      const shared = readFileSync(join(SHARED, 'MANIFEST.md'));
      expect(readFileSync(join(REAL, 'MANIFEST.md')).subarray(0, shared.length).equals(shared), 'MANIFEST.md starts with the shared one').toBe(true);
    },
  );

  it('every file named in MANIFEST.md has a verdict row', () => {
    const manifest = readFileSync(join(REAL, 'MANIFEST.md'), 'utf8');
    const named = [...manifest.matchAll(/^\| `([^`/]+\.(pdf|xml))` \|/gm)].map(([, name, ext]) => `${ext === 'xml' ? 'cte' : 'pdf'}/${name ?? ''}`);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((file) => !listed.has(file))).toEqual([]);
  });
});

describe('real fixtures: verdicts', () => {
  for (const row of ROWS) {
    const path = join(REAL, row.file);
    it(`${row.file} → ${row.verdict}${row.code === undefined ? '' : ` ${row.code}`} (${row.why})`, async () => {
      const bytes = new Uint8Array(readFileSync(path));
      const verdict = row.file.startsWith('pdf/') ? await checkLabel(bytes, LIMIT) : checkCte(bytes, LIMIT);
      if (row.verdict === 'accept') {
        expect(verdict.ok ? 'accepted' : `${verdict.error.code}: ${verdict.error.message}`).toBe('accepted');
        if (!verdict.ok) return;
        if (row.warning !== undefined) expect(verdict.warnings.join('\n')).toMatch(row.warning);
        const sent = sentBytes(verdict.value);
        expect(sha256(sent)).toBe(row.sent?.sha256 ?? sha256(bytes));
        if (row.sent?.tail !== undefined) expect(sent.subarray(-row.sent.tail.length).toString('latin1')).toBe(row.sent.tail);
        if (row.file.startsWith('pdf/')) expect(sent.toString('latin1')).toMatch(/%%EOF(\r\n|\r|\n)?$/);
        else expect(sent.toString('utf8')).toMatch(/^(?!<\?xml[^?]*encoding\s*=\s*["'](?!utf-8["'])[^"']*["'])/i);
      } else {
        expect(verdict.ok).toBe(false);
        if (verdict.ok) return;
        expect(verdict.error.code).toBe(row.code);
        expect(verdict.error.params?.['lookAlike']).toBe(row.lookAlike);
      }
    });
  }
});

/** The bytes the API gets for an accepted file: a label's cut PDF, a CT-e's text as UTF-8. */
function sentBytes(value: { pdf: Uint8Array } | { xml: string }): Buffer {
  return 'pdf' in value ? Buffer.from(value.pdf) : Buffer.from(value.xml, 'utf8');
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
