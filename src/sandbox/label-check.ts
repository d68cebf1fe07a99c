/**
 * The label rule of api-contract.md §4.3: `base64` holds a PDF, optionally behind the data URI
 * prefix `data:application/pdf;base64,`; the decoded bytes start with `%PDF` and end with
 * `%%EOF`, where only whitespace (space, \t, \r, \n) may follow the trailer.
 * Base64 is read strictly (standard alphabet, correct padding; line breaks are ignored), because
 * a lenient decoder would turn garbage into bytes that merely fail the header check.
 */

const DATA_URI_PREFIX = /^data:application\/pdf;base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const HEADER = Buffer.from('%PDF');
const TRAILER = Buffer.from('%%EOF');
const TRAILING_WHITESPACE = new Set([0x20, 0x09, 0x0d, 0x0a]);

export type LabelVerdict = { isPdf: true; bytes: Buffer } | { isPdf: false; reason: string };

export function checkLabel(base64: string): LabelVerdict {
  const encoded = base64.replace(DATA_URI_PREFIX, '').replace(/[\r\n]/g, '');
  if (encoded.length % 4 !== 0 || !BASE64.test(encoded)) return { isPdf: false, reason: 'base64 is not valid base64' };
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) return { isPdf: false, reason: 'the file is empty' };
  if (!bytes.subarray(0, HEADER.length).equals(HEADER)) return { isPdf: false, reason: 'invalid PDF header: the file does not start with %PDF' };
  let end = bytes.length;
  while (end > 0 && TRAILING_WHITESPACE.has(bytes[end - 1] ?? 0)) end--;
  if (end < HEADER.length + TRAILER.length || !bytes.subarray(end - TRAILER.length, end).equals(TRAILER)) {
    return { isPdf: false, reason: 'invalid PDF trailer: the file does not end with %%EOF' };
  }
  return { isPdf: true, bytes };
}
