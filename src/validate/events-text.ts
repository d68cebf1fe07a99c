/**
 * An events file's bytes as a warehouse's tools write them, read into text, and the separator of a
 * CSV file. Excel's "CSV" in Brazil is separated by `;` (the decimal mark is `,`), saved either as
 * UTF-8 with a byte-order mark or in Windows-1252, with CRLF line ends; other tools write plain
 * UTF-8 with `,`. Nothing in the file says which, so:
 *
 * - text: a UTF-8 BOM is dropped; bytes that are valid UTF-8 are read as UTF-8; anything else is
 *   read as Windows-1252, which gives every byte a character (a file that is neither still reaches
 *   the record checks, which refuse what they cannot read, line by line).
 * - separator: the header row decides. The separator whose split names both delivery_id and
 *   event_at wins; otherwise the one the header holds more of outside quotes; `,` when in doubt.
 */

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const WINDOWS_1252 = new TextDecoder('windows-1252');

export type CsvSeparator = ',' | ';';

export function decodeEventsBytes(bytes: Uint8Array): string {
  try {
    // The decoder drops a leading BOM itself (ignoreBOM: false).
    return UTF8.decode(bytes);
  } catch {
    return WINDOWS_1252.decode(bytes);
  }
}

/** The separator of a CSV file, from its first non-blank line (the header row). */
export function csvSeparatorOf(headerLine: string): CsvSeparator {
  const names = (separator: CsvSeparator): string[] =>
    splitOutsideQuotes(headerLine, separator).map((name) => name.trim().replace(/^"|"$/g, '').trim().toLowerCase());
  for (const separator of [',', ';'] as const) {
    const fields = names(separator);
    if (fields.includes('delivery_id') && fields.includes('event_at')) return separator;
  }
  return names(';').length > names(',').length ? ';' : ',';
}

function splitOutsideQuotes(line: string, separator: CsvSeparator): string[] {
  const fields: string[] = [];
  let current = '';
  let isQuoted = false;
  for (const char of line) {
    if (char === '"') isQuoted = !isQuoted;
    if (char === separator && !isQuoted) {
      fields.push(current);
      current = '';
    } else current += char;
  }
  fields.push(current);
  return fields;
}
