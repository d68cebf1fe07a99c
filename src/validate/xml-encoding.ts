import { SyncError } from '../errors.js';
import { reasonOf, refusal } from '../i18n/reason.js';

/**
 * Bytes → text for a CT-e. The XML declaration decides (UTF-8 when absent, as XML says); a BOM wins
 * over it (UTF-8, UTF-16 LE or BE). Undecodable bytes are refused rather than replaced, because a
 * CT-e is signed text and a silently changed name or value is worse than a clear refusal.
 * The text travels as a JSON string, so the API gets UTF-8 bytes: a declaration that named another
 * encoding would then lie (libxml2, under many fiscal back ends, reads "UTF-16" over UTF-8 bytes as
 * an error and "ISO-8859-1" as mojibake), so its encoding pseudo-attribute is made to say UTF-8.
 * Nothing else changes: XML-DSig canonicalisation leaves the declaration out, so signatures hold.
 */

export interface DecodedXml {
  /** The text, BOM stripped, its declaration (if any) saying UTF-8: what is sent. */
  text: string;
  /** The encoding the declaration named when it was not UTF-8 (e.g. 'ISO-8859-1', 'UTF-16'); null otherwise. */
  declared: string | null;
  /** How the bytes were read. */
  readAs: 'UTF-8' | 'UTF-16LE' | 'UTF-16BE' | 'windows-1252';
}

const LATIN_LABELS = new Set(['iso-8859-1', 'iso8859-1', 'iso_8859-1', 'latin1', 'latin-1', 'l1', 'windows-1252', 'cp1252']);
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii']);
/** The declaration's encoding pseudo-attribute, its quote and its value. */
const DECLARED_ENCODING = /^(\s*<\?xml\s[^?]*?encoding\s*=\s*)(["'])([A-Za-z0-9._:-]+)\2/;

export function decodeXml(bytes: Uint8Array): DecodedXml | SyncError {
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) return honest(decodeStrict(bytes.subarray(3), 'utf-8'), 'UTF-8');
  if (startsWith(bytes, [0xfe, 0xff])) return honest(decodeStrict(bytes.subarray(2), 'utf-16be'), 'UTF-16BE');
  if (startsWith(bytes, [0xff, 0xfe])) return honest(decodeStrict(bytes.subarray(2), 'utf-16le'), 'UTF-16LE');
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 256)).toString('latin1');
  const declared = DECLARED_ENCODING.exec(head)?.[3]?.toLowerCase();
  if (declared === undefined || UTF8_LABELS.has(declared)) return honest(decodeStrict(bytes, 'utf-8'), 'UTF-8');
  // WHATWG decodes every Latin-1 label as windows-1252, which is what such files really hold.
  if (LATIN_LABELS.has(declared)) return honest(new TextDecoder('windows-1252').decode(bytes), 'windows-1252');
  return refusal('CTE_NOT_XML', reasonOf('reason.cte.encodingUnknown', { encoding: declared }));
}

/** The declaration made to say UTF-8 when it named another encoding; nothing else is touched. */
function honest(text: string | SyncError, readAs: DecodedXml['readAs']): DecodedXml | SyncError {
  if (text instanceof SyncError) return text;
  const match = DECLARED_ENCODING.exec(text);
  const label = match?.[3];
  if (match === null || label === undefined || /^utf-?8$/i.test(label)) return { text, declared: null, readAs };
  const [whole, before = '', quote = '"'] = match;
  return { text: `${before}${quote}UTF-8${quote}${text.slice(whole.length)}`, declared: label, readAs };
}

function decodeStrict(bytes: Uint8Array, encoding: 'utf-8' | 'utf-16be' | 'utf-16le'): string | SyncError {
  try {
    return new TextDecoder(encoding, { fatal: true, ignoreBOM: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    const loose = new TextDecoder(encoding).decode(bytes);
    const at = loose.indexOf('\uFFFD');
    const line = loose.slice(0, Math.max(at, 0)).split('\n').length;
    return refusal('CTE_NOT_XML', reasonOf('reason.cte.encodingInvalid', { encoding: encoding.toUpperCase(), line: String(line) }));
  }
}

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((byte, index) => bytes[index] === byte);
}
