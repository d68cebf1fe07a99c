/**
 * What a wrong file is, so its refusal can say so and say what to do: a file in the labels inbox
 * that is no PDF but a thermal-printer label, an image, an archive, an Office document or a web
 * page; a file in the CT-e inbox whose root is another fiscal document (NF-e, MDF-e) or an event.
 * Each reason is one whole sentence a look-alike, in the message catalogs (`reason.label.lookAlike.*`,
 * `reason.cte.lookAlike.*`), and its refusal carries the look-alike's id as a parameter (`lookAlike`).
 */
import { reasonOf, type Reason } from '../i18n/reason.js';

export type LabelLookAlike = 'zpl' | 'epl' | 'png' | 'jpeg' | 'tiff' | 'gif' | 'office-zip' | 'zip' | 'office-ole2' | 'html' | 'xml-base64-pdf';

/** Magic numbers at byte 0. */
const MAGIC: ReadonlyArray<[LabelLookAlike, number[]]> = [
  ['png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['jpeg', [0xff, 0xd8, 0xff]],
  ['tiff', [0x49, 0x49, 0x2a, 0x00]],
  ['tiff', [0x4d, 0x4d, 0x00, 0x2a]],
  ['gif', [0x47, 0x49, 0x46, 0x38]],
  ['office-ole2', [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]],
];
/** A ZIP's local file header, its end record (an empty archive), or a spanned archive's marker. */
const ZIP_STARTS = [
  [0x50, 0x4b, 0x03, 0x04],
  [0x50, 0x4b, 0x05, 0x06],
  [0x50, 0x4b, 0x07, 0x08],
];
/** Entry names stay uncompressed in a ZIP's headers: an OOXML package names its content types. */
const OOXML_ENTRY = /\[Content_Types\]\.xml|(?:word|xl|ppt)\/[A-Za-z]/;
/** How much of a text file is looked at: the start says what it is. */
const TEXT_HEAD = 4096;

/** What a file that has no %PDF- header looks like, or null when it resembles nothing we know. */
export function labelLookAlike(bytes: Uint8Array): LabelLookAlike | null {
  for (const [kind, magic] of MAGIC) if (startsWith(bytes, magic)) return kind;
  if (ZIP_STARTS.some((magic) => startsWith(bytes, magic))) {
    return OOXML_ENTRY.test(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1')) ? 'office-zip' : 'zip';
  }
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, TEXT_HEAD))
    .toString('latin1')
    .replace(/^\xEF\xBB\xBF/, '');
  const start = head.trimStart();
  // A SOAP or other XML answer with the PDF inside as base64 (`JVBERi0` is base64 of `%PDF-`).
  if (start.startsWith('<') && /JVBERi0/.test(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1'))) return 'xml-base64-pdf';
  if (/^(<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(start) || /<html[\s>]/i.test(head.slice(0, 1024))) return 'html';
  // ZPL: a label format opens with ^XA and holds fields (^FO origin, ^FD data) and closes with ^XZ.
  if (/\^XA/i.test(head) && /\^(XZ|FO|FD)/i.test(head)) return 'zpl';
  if (isEpl(start)) return 'epl';
  return null;
}

/** EPL2: one command a line; a label clears the buffer (N), draws text (A…) or bar codes (B…), prints (P<n>). */
function isEpl(text: string): boolean {
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  const first = lines.find((line) => line !== '') ?? '';
  if (!/^(N|q\d+|Q\d+,\d+|I8,|O[A-Z]*|S\d|D\d{1,2}|ZT|ZB)$/.test(first)) return false;
  return lines.some((line) => /^[AB]\d+,\d+,\d/.test(line)) && lines.some((line) => /^P\d+(,\d+)?$/.test(line));
}

/** MIME headers, a multipart boundary line, or a SOAP envelope: what a web service's answer saved whole starts with. */
const MIME_START = /^--[^\s]{4,}\r?$|^content-(type|id|transfer-encoding):|<(?:[\w-]+:)?envelope[\s>]/im;

/**
 * A MIME multipart message holding a PDF part (a SOAP response with its attachment, MTOM/XOP),
 * saved as .pdf: bytes before %PDF- (at `pdfAt`) and after its %%EOF. The reason names it and where
 * the PDF part is, so one round fixes it; null when the bytes before %PDF- do not look like MIME.
 */
export function mimeLabelReason(text: string, pdfAt: number): Reason | null {
  if (!MIME_START.test(text.slice(0, pdfAt))) return null;
  const eof = text.lastIndexOf('%%EOF');
  if (eof < pdfAt) return reasonOf('reason.label.mimeNoEof', { start: pdfAt });
  return reasonOf('reason.label.mime', { start: pdfAt, end: eof + 5, before: pdfAt, after: text.length - (eof + 5) });
}

/** The refusal's reason: one whole sentence a look-alike, in the catalogs (`reason.label.lookAlike.<kind>`). */
export function labelLookAlikeReason(kind: LabelLookAlike): Reason {
  return reasonOf(`reason.label.lookAlike.${kind}`);
}

export type CteLookAlike = 'nfe' | 'nfe-event' | 'mdfe' | 'mdfe-event' | 'cte-event' | 'other';

/** What a CT-e folder file whose root is not a CT-e is, by its root element's name. */
export function cteLookAlike(root: string): CteLookAlike {
  const name = root.toLowerCase();
  if (/evento/.test(name)) {
    if (name.includes('mdfe')) return 'mdfe-event';
    if (name.includes('nfe')) return 'nfe-event';
    return name.includes('cte') ? 'cte-event' : 'other';
  }
  if (name === 'nfe' || name === 'nfeproc') return 'nfe';
  if (name === 'mdfe' || name === 'mdfeproc') return 'mdfe';
  return 'other';
}

/** The refusal's reason (`reason.cte.lookAlike.<kind>`), naming the root element. */
export function cteLookAlikeReason(kind: CteLookAlike, root: string): Reason {
  return reasonOf(`reason.cte.lookAlike.${kind}`, { root });
}

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, index) => bytes[index] === byte);
}
