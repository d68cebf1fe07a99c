/**
 * What an encrypted PDF asks of whoever opens it: a password, or none (an EMPTY user password,
 * which every reader tries first and opens without asking), and whether its permissions let it be
 * printed. The standard security handler's check of a user password (ISO 32000-2, 7.6.4.4:
 * algorithms 2, 4, 5 for revisions 2–4 with RC4/AES-128; 2.A and 2.B for revisions 5 and 6 with
 * AES-256), tried with the empty password only. Nothing is decrypted.
 *
 * Why it matters (issue 45): such a PDF was told "the platform must print it without a password",
 * which is not true of it. The API's contract (§4.3) asks only that the file start with %PDF and
 * end with %%EOF, and a PDF that opens without a password prints unattended unless its
 * permissions forbid printing; so it is sent (with a warning), and refused only when a password is
 * needed to open it or printing is not permitted.
 */
import { createCipheriv, createHash } from 'node:crypto';

export type Encryption =
  /** Opens without a password; `canPrint` from its permissions (bit 3 of /P). */
  | { opens: 'without-password'; canPrint: boolean; revision: number }
  | { opens: 'with-password'; revision: number }
  /** Not the standard handler (a certificate, a plug-in), or a dictionary we cannot read. */
  | { opens: 'unknown'; handler: string };

/** 32 bytes that pad a password (algorithm 2, step a). */
const PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');

/** The encryption of a PDF whose trailer names /Encrypt, read from its latin1 text; `password` is for tests. */
export function readEncryption(text: string, password = ''): Encryption {
  const dictionary = encryptDictionary(text);
  if (dictionary === null) return { opens: 'unknown', handler: 'unreadable' };
  const handler = /\/Filter\s*\/([A-Za-z0-9.#_-]+)/.exec(dictionary)?.[1] ?? 'none';
  const revision = Number(/\/R\s+(\d+)/.exec(dictionary)?.[1] ?? NaN);
  const o = stringAfter(dictionary, 'O');
  const u = stringAfter(dictionary, 'U');
  const p = Number(/\/P\s+(-?\d+)/.exec(dictionary)?.[1] ?? NaN);
  if (handler !== 'Standard' || !Number.isInteger(revision) || o === null || u === null || !Number.isInteger(p)) return { opens: 'unknown', handler };
  const pw = Buffer.from(password, 'utf8');
  let opens: boolean;
  if (revision <= 4) {
    const id = firstId(text);
    if (id === null) return { opens: 'unknown', handler };
    const lengthBits = revision === 2 ? 40 : Number(/\/Length\s+(\d+)/.exec(dictionary)?.[1] ?? 40);
    const encryptMetadata = !/\/EncryptMetadata\s+false/.test(dictionary);
    opens = userPasswordR2to4(pw, { revision, o, u, p, id, keyBytes: Math.min(16, Math.max(5, lengthBits / 8)), encryptMetadata });
  } else if (revision === 5 || revision === 6) {
    if (u.length < 48) return { opens: 'unknown', handler };
    const hash = revision === 5 ? sha('sha256', Buffer.concat([pw, u.subarray(32, 40)])) : hash2B(pw, u.subarray(32, 40), Buffer.alloc(0));
    opens = hash.subarray(0, 32).equals(u.subarray(0, 32));
  } else {
    return { opens: 'unknown', handler };
  }
  // Bit 3 (value 4) of /P: print the document.
  return opens ? { opens: 'without-password', canPrint: (p & 4) !== 0, revision } : { opens: 'with-password', revision };
}

/** The /Encrypt dictionary: inline in the trailer, or the object it references. */
function encryptDictionary(text: string): string | null {
  const reference = [...text.matchAll(/\/Encrypt\s+(\d+)\s+(\d+)\s+R/g)].at(-1);
  if (reference !== undefined) {
    const start = [...text.matchAll(new RegExp(`(?:^|[\\s>])${reference[1]}\\s+${reference[2]}\\s+obj\\b`, 'g'))].at(-1)?.index;
    if (start === undefined) return null;
    const end = text.indexOf('endobj', start);
    return text.slice(start, end < 0 ? start + 4096 : end);
  }
  const inline = /\/Encrypt\s*<</.exec(text);
  return inline === null ? null : text.slice(inline.index, inline.index + 4096);
}

/** The string value of /name (hex `<…>` or literal `(…)`), as bytes. */
function stringAfter(dictionary: string, name: string): Buffer | null {
  const match = new RegExp(`/${name}\\s*([<(])`).exec(dictionary);
  if (match === null) return null;
  const start = match.index + match[0].length;
  if (match[1] === '<') {
    const end = dictionary.indexOf('>', start);
    return end < 0 ? null : Buffer.from(dictionary.slice(start, end).replace(/\s+/g, ''), 'hex');
  }
  return literalString(dictionary, start);
}

/** A PDF literal string from just after its `(`: escapes and balanced parentheses (7.3.4.2). */
function literalString(text: string, start: number): Buffer | null {
  const bytes: number[] = [];
  let depth = 1;
  for (let i = start; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) {
      const next = text[i + 1] ?? '';
      const octal = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4))?.[0];
      if (octal !== undefined) {
        bytes.push(parseInt(octal, 8) & 0xff);
        i += octal.length;
      } else if (next === '\r' || next === '\n') {
        i += next === '\r' && text[i + 2] === '\n' ? 2 : 1;
      } else {
        bytes.push({ n: 0x0a, r: 0x0d, t: 0x09, b: 0x08, f: 0x0c }[next] ?? next.charCodeAt(0));
        i += 1;
      }
      continue;
    }
    if (c === 0x28) depth += 1;
    if (c === 0x29 && --depth === 0) return Buffer.from(bytes);
    bytes.push(c & 0xff);
  }
  return null;
}

/** The first string of the trailer's /ID array. */
function firstId(text: string): Buffer | null {
  const match = [...text.matchAll(/\/ID\s*\[\s*([<(])/g)].at(-1);
  if (match === undefined) return null;
  const start = match.index + match[0].length;
  if (match[1] === '<') {
    const end = text.indexOf('>', start);
    return end < 0 ? null : Buffer.from(text.slice(start, end).replace(/\s+/g, ''), 'hex');
  }
  return literalString(text, start);
}

interface R2to4 {
  revision: number;
  o: Buffer;
  u: Buffer;
  p: number;
  id: Buffer;
  keyBytes: number;
  encryptMetadata: boolean;
}

/** Algorithms 2 (the key), 4 and 5 (the /U value it makes), compared with /U. */
function userPasswordR2to4(password: Buffer, d: R2to4): boolean {
  const padded = Buffer.concat([password.subarray(0, 32), PAD]).subarray(0, 32);
  const p = Buffer.alloc(4);
  p.writeInt32LE(d.p);
  const parts = [padded, d.o.subarray(0, 32), p, d.id];
  if (d.revision >= 4 && !d.encryptMetadata) parts.push(Buffer.from([0xff, 0xff, 0xff, 0xff]));
  let key = sha('md5', Buffer.concat(parts));
  if (d.revision >= 3) for (let i = 0; i < 50; i += 1) key = sha('md5', key.subarray(0, d.keyBytes));
  key = key.subarray(0, d.keyBytes);
  if (d.revision === 2) return rc4(key, PAD).equals(d.u.subarray(0, 32));
  let x = rc4(key, sha('md5', Buffer.concat([PAD, d.id])));
  for (let i = 1; i <= 19; i += 1) x = rc4(Buffer.from(key.map((byte) => byte ^ i)), x);
  return x.equals(d.u.subarray(0, 16));
}

/** Algorithm 2.B (revision 6): SHA-256, then rounds of AES-128-CBC and SHA-256/384/512. */
function hash2B(password: Buffer, salt: Buffer, userKey: Buffer): Buffer {
  let k = sha('sha256', Buffer.concat([password, salt, userKey]));
  for (let round = 0; ; round += 1) {
    const k1 = Buffer.concat(Array.from({ length: 64 }, () => Buffer.concat([password, k, userKey])));
    const cipher = createCipheriv('aes-128-cbc', k.subarray(0, 16), k.subarray(16, 32)).setAutoPadding(false);
    const e = Buffer.concat([cipher.update(k1), cipher.final()]);
    let sum = 0;
    for (let i = 0; i < 16; i += 1) sum += e[i]!;
    k = sha(['sha256', 'sha384', 'sha512'][sum % 3]!, e);
    if (round >= 63 && e[e.length - 1]! <= round - 32) return k.subarray(0, 32);
  }
}

function sha(algorithm: string, data: Buffer): Buffer {
  return createHash(algorithm).update(data).digest();
}

/** RC4 (Node's OpenSSL 3 leaves it out by default): a few lines, for the check above only. */
function rc4(key: Buffer, data: Buffer): Buffer {
  const s = Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i += 1) {
    j = (j + s[i]! + key[i % key.length]!) & 0xff;
    [s[i], s[j]] = [s[j]!, s[i]!];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n += 1) {
    i = (i + 1) & 0xff;
    j = (j + s[i]!) & 0xff;
    [s[i], s[j]] = [s[j]!, s[i]!];
    out[n] = data[n]! ^ s[(s[i]! + s[j]!) & 0xff]!;
  }
  return out;
}
