import type { SyncError } from '../errors.js';
import { reasonOf, refusal } from '../i18n/reason.js';

/**
 * Bytes → text for a CT-e. The XML declaration decides (UTF-8 when absent, as XML says); a BOM wins
 * over it. Undecodable bytes are refused rather than replaced, because a CT-e is signed text and a
 * silently changed name or value is worse than a clear refusal.
 */

const LATIN_LABELS = new Set(['iso-8859-1', 'iso8859-1', 'iso_8859-1', 'latin1', 'latin-1', 'l1', 'windows-1252', 'cp1252']);
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii']);

export function decodeXml(bytes: Uint8Array): string | SyncError {
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) return decodeStrict(bytes.subarray(3), 'utf-8');
  if (startsWith(bytes, [0xfe, 0xff])) return decodeStrict(bytes.subarray(2), 'utf-16be');
  if (startsWith(bytes, [0xff, 0xfe])) return decodeStrict(bytes.subarray(2), 'utf-16le');
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 256)).toString('latin1');
  const declared = /^\s*<\?xml\s[^?]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head)?.[1]?.toLowerCase();
  if (declared === undefined || UTF8_LABELS.has(declared)) return decodeStrict(bytes, 'utf-8');
  // WHATWG decodes every Latin-1 label as windows-1252, which is what such files really hold.
  if (LATIN_LABELS.has(declared)) return new TextDecoder('windows-1252').decode(bytes);
  return refusal('CTE_NOT_XML', reasonOf('reason.cte.encodingUnknown', { encoding: declared }));
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
