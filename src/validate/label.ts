import { PDFDocument, ParseSpeeds } from 'pdf-lib';
import { SyncError, type ErrorCode } from '../errors.js';
import { reasonOf, refusal, type Reason } from '../i18n/reason.js';
import { labelLookAlike, labelLookAlikeReason, mimeLabelReason } from './look-alike.js';
import { readEncryption } from './pdf-encryption.js';
import { accept, reject, type Verdict } from './verdict.js';

/**
 * Label PDF check, in the order an operator fixes things: size, header, trailer, encryption, structure.
 * The API (4.3) refuses a file that does not START with %PDF and END with %%EOF, so both are checked
 * on the exact bytes: junk before the header is refused even though most readers skip it.
 * After the last %%EOF, padding (what the PDF spec counts as whitespace: NUL, space, tab, CR, LF,
 * form feed) is fine: browsers' print-to-PDF pads labels with thousands of NULs, and no reader
 * looks past %%EOF. The verdict carries the bytes to SEND, cut after %%EOF and at most one line
 * end, so the API gets a file ending in %%EOF; anything else after %%EOF is refused.
 * Decision: an encrypted PDF that needs a password to open is refused (the platform prints the label
 * unattended); one that opens without a password (an empty user password) and permits printing is
 * sent, with a warning: the API's contract asks only for %PDF … %%EOF (pdf-encryption.ts says why).
 */

export interface LabelSummary {
  /** From the header, e.g. '1.7'. */
  pdfVersion: string;
  pageCount: number;
  /** The PDF's length as found (after a data URI is decoded). */
  byteLength: number;
  /** What is sent: the PDF, decoded from a data URI, without the padding after %%EOF's line end. */
  pdf: Uint8Array;
  /** Padding bytes after %%EOF (and its line end) that are not sent; 0 when the file ends there. */
  paddingBytes: number;
}

const DATA_URI_PREFIX = 'data:application/pdf;base64,';
const HEADER = /^%PDF-(\d\.\d)/;
/** What may follow %%EOF: the PDF spec's whitespace (NUL, tab, LF, form feed, CR, space). */
const PADDING = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
/** /Encrypt as a whole PDF name (not /EncryptMetadata). */
const ENCRYPT_KEY = /\/Encrypt(?![^\s/<>[\]()%{}])/;

export async function checkLabel(bytes: Uint8Array, options: { maxBytes: number }): Promise<Verdict<LabelSummary>> {
  const decoded = decodeDataUri(bytes, options.maxBytes);
  if (decoded instanceof SyncError) return reject(decoded);
  const pdf = decoded;
  if (pdf.length > options.maxBytes) {
    return fail('LABEL_TOO_LARGE', reasonOf('reason.label.tooLarge', { bytes: String(pdf.length), max: String(options.maxBytes) }));
  }
  if (pdf.length === 0) return fail('LABEL_EMPTY', reasonOf('reason.label.empty'));
  const text = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.length).toString('latin1');

  const header = HEADER.exec(text.slice(0, 16));
  if (header === null) return reject(headerProblem(pdf, text));
  const end = trailerEnd(text);
  if (end instanceof SyncError) return reject(end);
  const warnings: Reason[] = [];
  let opensWithoutPassword = false;
  if (hasEncryptInTrailer(text)) {
    const encryption = readEncryption(text.slice(0, end));
    if (encryption.opens === 'unknown') {
      // An /Encrypt that names nothing readable: encrypted, and nothing more is known.
      if (encryption.handler === 'unreadable') return encrypted();
      return fail('LABEL_ENCRYPTED', reasonOf('reason.label.encryptedHandler', { handler: encryption.handler }));
    }
    if (encryption.opens === 'with-password') return fail('LABEL_ENCRYPTED', reasonOf('reason.label.encryptedPassword'));
    if (!encryption.canPrint) return fail('LABEL_ENCRYPTED', reasonOf('reason.label.encryptedNoPrint'));
    opensWithoutPassword = true;
    warnings.push(reasonOf('warning.label.encryptedNoPassword'));
  }

  let document: PDFDocument;
  try {
    // What is parsed is what is sent.
    document = await PDFDocument.load(pdf.subarray(0, end), {
      updateMetadata: false,
      ignoreEncryption: true,
      throwOnInvalidObject: true,
      parseSpeed: ParseSpeeds.Medium,
    });
  } catch (error) {
    return unreadable('reason.label.unreadableAt', error);
  }
  if (document.isEncrypted && !opensWithoutPassword) return encrypted();
  let pageCount: number;
  try {
    pageCount = document.getPageCount();
  } catch (error) {
    return unreadable('reason.label.unreadablePagesAt', error);
  }
  if (pageCount < 1) return fail('LABEL_UNREADABLE', reasonOf('reason.label.noPages'));
  const summary = { pdfVersion: header[1] ?? '', pageCount, byteLength: pdf.length, pdf: pdf.subarray(0, end), paddingBytes: pdf.length - end };
  return accept(summary, [...warnings, ...startxrefWarnings(text.slice(0, end))]);
}

/** The API takes the base64 with or without this prefix; a file saved with it is decoded first. */
function decodeDataUri(bytes: Uint8Array, maxBytes: number): Uint8Array | SyncError {
  const start = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, DATA_URI_PREFIX.length)).toString('latin1');
  if (start.toLowerCase() !== DATA_URI_PREFIX) return bytes;
  // base64 is 4/3 of the data: no need to decode what is certainly too large.
  if (bytes.length > Math.ceil(maxBytes / 3) * 4 * 1.1 + 1024) {
    return refusal('LABEL_TOO_LARGE', reasonOf('reason.label.dataUriTooLarge', { bytes: String(bytes.length), max: String(maxBytes) }));
  }
  const body = Buffer.from(bytes.buffer, bytes.byteOffset + DATA_URI_PREFIX.length, bytes.length - DATA_URI_PREFIX.length)
    .toString('latin1')
    .replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) {
    return refusal('LABEL_NOT_PDF', reasonOf('reason.label.dataUriNotBase64'));
  }
  return new Uint8Array(Buffer.from(body, 'base64'));
}

function headerProblem(pdf: Uint8Array, text: string): SyncError {
  const at = text.indexOf('%PDF-');
  if (at > 0) {
    // A SOAP/MIME response saved whole: say so at once, not "bytes precede" and then "trailing data".
    const mime = mimeLabelReason(text, at);
    if (mime !== null) return refusal('LABEL_NOT_PDF', mime, { params: { lookAlike: 'mime-multipart' } });
    return refusal('LABEL_NOT_PDF', reasonOf('reason.label.bytesBeforeHeader', { bytes: at }));
  }
  if (at === 0) return refusal('LABEL_NOT_PDF', reasonOf('reason.label.headerNoVersion', { header: JSON.stringify(text.slice(0, 8)) }));
  const lookAlike = labelLookAlike(pdf);
  if (lookAlike !== null) return refusal('LABEL_NOT_PDF', labelLookAlikeReason(lookAlike), { params: { lookAlike } });
  return refusal('LABEL_NOT_PDF', reasonOf('reason.label.notPdf'));
}

/**
 * Where the bytes to send end: after the last %%EOF and its line end (CRLF, LF or CR) when only
 * padding follows; the refusal when the file has no %%EOF or something else follows it.
 */
function trailerEnd(text: string): number | SyncError {
  let end = text.length;
  while (end > 0 && PADDING.has(text.charCodeAt(end - 1))) end -= 1;
  if (text.slice(0, end).endsWith('%%EOF')) {
    if (text.startsWith('\r\n', end)) return end + 2;
    return text[end] === '\n' || text[end] === '\r' ? end + 1 : end;
  }
  const last = text.lastIndexOf('%%EOF');
  if (last < 0) {
    return refusal('LABEL_TRUNCATED', reasonOf('reason.label.noEof'));
  }
  const bytesAfterEof = text.length - (last + 5);
  let at = last + 5;
  while (PADDING.has(text.charCodeAt(at))) at += 1;
  const firstByte = `0x${text.charCodeAt(at).toString(16).padStart(2, '0')}`;
  const reason = reasonOf('reason.label.trailingData', { bytes: String(bytesAfterEof), firstByte, offset: String(at) });
  return refusal('LABEL_TRAILING_DATA', reason, { params: { bytesAfterEof, firstByte, offset: at } });
}

/** /Encrypt in a trailer dictionary or in a cross-reference stream's dictionary. */
function hasEncryptInTrailer(text: string): boolean {
  for (const match of text.matchAll(/trailer\s*<</g)) {
    const end = text.indexOf('startxref', match.index);
    if (ENCRYPT_KEY.test(text.slice(match.index, end < 0 ? match.index + 8192 : end))) return true;
  }
  for (const match of text.matchAll(/\/Type\s*\/XRef(?![A-Za-z])/g)) {
    const start = Math.max(0, text.lastIndexOf('obj', match.index));
    const end = text.indexOf('stream', match.index);
    if (ENCRYPT_KEY.test(text.slice(start, end < 0 ? match.index + 8192 : end))) return true;
  }
  return false;
}

/** The API does not look at startxref, and readers repair a wrong one, so this is only a warning. */
function startxrefWarnings(text: string): Reason[] {
  const match = /startxref\s+(\d+)\s*%%EOF\s*$/.exec(text.slice(-1024));
  if (match === null) return [reasonOf('warning.label.noStartxref')];
  const offset = Number(match[1]);
  const target = text.slice(offset, offset + 64);
  if (offset < text.length && (target.startsWith('xref') || /^\d+\s+\d+\s+obj/.test(target))) return [];
  return [reasonOf('warning.label.startxrefWrong', { offset: String(offset) })];
}

function encrypted(): Verdict<LabelSummary> {
  return fail('LABEL_ENCRYPTED', reasonOf('reason.label.encrypted'));
}

function fail(code: ErrorCode, reason: Reason): Verdict<LabelSummary> {
  return reject(refusal(code, reason));
}

/**
 * The parser's words stay out of the reason (they are English, and pdf-lib's end in a parenthesis
 * (`Trying to parse invalid object: {"line":15,"column":0,"offset":76})`) made `…76}))` in ours, issue 45): the reason names the byte offset where reading
 * failed when the parser gave one; its message is kept in the refusal's params for the curious.
 */
function unreadable(key: 'reason.label.unreadableAt' | 'reason.label.unreadablePagesAt', error: unknown): Verdict<LabelSummary> {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  const offset = /offset"?[=:]\s*(\d+)/.exec(message)?.[1];
  const parserError = message.length > 160 ? `${message.slice(0, 160)}…` : message;
  return reject(refusal('LABEL_UNREADABLE', reasonOf(key, { offset: offset ?? 'none' }), { params: { parserError } }));
}
