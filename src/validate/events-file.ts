import { CsvError, parse, type InfoRecord } from 'csv-parse/sync';
import type { SyncError } from '../errors.js';
import { type ErrorCode } from '../errors.js';
import { asReason, reasonOf, renderReason, type Reason } from '../i18n/reason.js';
import { checkEventRecord, type CollectingEventRecord } from './event-record.js';
import type { EventsFormat } from './spool-name.js';

// Kept here too for the callers that read an events file: which format a name says.
export { eventsFormatOf, type EventsFormat } from './spool-name.js';

/**
 * Reads one events file into checked records and per-line rejects. A bad line never holds back the
 * good ones: each line (NDJSON) or record (CSV) is judged alone, and line numbers are 1-based
 * physical lines of the file, so an operator can open the file at the reported line.
 */

export type EventLineRecord = CollectingEventRecord & { line: number };
export interface EventLineReject {
  line: number;
  code: ErrorCode;
  /** The English reason (logs, `.error.json` `message`). */
  message: string;
  /** The reason's key and values, for a reader in another language. */
  reason?: Reason;
}
export interface EventsFileResult {
  records: EventLineRecord[];
  rejects: EventLineReject[];
}

export function parseEventsFile(text: string, format: EventsFormat, options: { maxLineBytes: number }): EventsFileResult {
  const result: EventsFileResult = { records: [], rejects: [] };
  // Long lines are blanked, not removed, so the line numbers of the others stay true.
  const lines = text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\n|\r/)
    .map((line, index) => {
      const bytes = Buffer.byteLength(line, 'utf8');
      if (bytes <= options.maxLineBytes) return line;
      result.rejects.push(
        reject(index + 1, 'EVENT_LINE_TOO_LONG', reasonOf('reason.event.lineTooLong', { bytes: String(bytes), max: String(options.maxLineBytes) })),
      );
      return '';
    });
  if (format === 'ndjson') readNdjson(lines, result);
  else readCsv(lines, result);
  result.rejects.sort((a, b) => a.line - b.line);
  return result;
}

function readNdjson(lines: string[], result: EventsFileResult): void {
  lines.forEach((text, index) => {
    if (text.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      result.rejects.push(reject(index + 1, 'EVENT_BAD_RECORD', reasonOf('reason.event.notJson', { detail: reason })));
      return;
    }
    take(raw, index + 1, result);
  });
}

/** Field separators other than the comma that a CSV header may be split by. */
const OTHER_SEPARATORS = [';', '\t', '|'];

function readCsv(lines: string[], result: EventsFileResult): void {
  const { header, rows } = csvTable(lines, result);
  if (header === null) return;
  const names = header.fields.map((name) => name.trim().toLowerCase());
  const idColumn = names.indexOf('delivery_id');
  const atColumn = names.indexOf('event_at');
  if (idColumn < 0 || atColumn < 0) {
    const absent = [idColumn < 0 ? 'delivery_id' : null, atColumn < 0 ? 'event_at' : null].filter((name) => name !== null);
    // A header read as one field split by another character (';' is what a spreadsheet in Brazil writes): say which.
    const separator = OTHER_SEPARATORS.find((each) => names.some((name) => name.includes(each)));
    result.rejects.push(
      reject(
        header.line,
        'EVENT_BAD_RECORD',
        separator !== undefined
          ? reasonOf('reason.event.headerSeparator', { separator: separator === '\t' ? '\\t' : separator, found: names.join(', ') })
          : reasonOf(absent.length === 1 ? 'reason.event.headerLacks' : 'reason.event.headerLacksBoth', { missing: absent.join(''), found: names.join(', ') }),
      ),
    );
    return;
  }
  for (const row of rows) {
    // A row of empty fields (",,", a spreadsheet's padding) holds nothing to lose, whatever its width.
    if (row.fields.every((field) => field === '')) continue;
    // A row wider or narrower than its header most often held an unquoted comma or comes from shifted
    // columns: its delivery_id and event_at columns cannot be trusted, so the row is not sent.
    if (!row.fitsHeader) {
      const key = row.fields.length > names.length ? 'reason.event.rowTooWide' : 'reason.event.rowTooNarrow';
      result.rejects.push(reject(row.line, 'EVENT_BAD_RECORD', reasonOf(key, { fields: row.fields.length, columns: String(names.length) })));
      continue;
    }
    take({ delivery_id: row.fields[idColumn], event_at: row.fields[atColumn] }, row.line, result);
  }
}

interface CsvRow {
  line: number;
  fields: string[];
  /** csv-parse found as many fields as the header has columns. */
  fitsHeader: boolean;
}
interface CsvTable {
  header: CsvRow | null;
  rows: CsvRow[];
}

/** The whole file in one pass; if it is malformed (an unclosed quote…), each physical line on its own. */
function csvTable(lines: string[], result: EventsFileResult): CsvTable {
  try {
    const table: CsvTable = { header: null, rows: [] };
    table.rows = parseCsv(lines.join('\n'), 1, table);
    return table;
  } catch {
    const table: CsvTable = { header: null, rows: [] };
    lines.forEach((line, index) => {
      try {
        table.rows.push(...parseCsv(line, index + 1, table));
      } catch (error) {
        const reason = error instanceof Error ? error.message.replace(/ at line \d+/, '') : String(error);
        result.rejects.push(reject(index + 1, 'EVENT_BAD_RECORD', reasonOf('reason.event.badCsv', { detail: reason })));
      }
    });
    return table;
  }
}

/**
 * Parses `text` (starting at line `firstLine` of the file) into rows. The first row of the file is
 * the header: csv-parse takes it through `columns` and then flags, through the record's info, every
 * row whose field count differs from the header's (kept thanks to relax_column_count, so the row can
 * be reported). Columns are named by position, so field order and repeated header names stay ours
 * to read. Per-line parsing hands the header found on an earlier line to csv-parse the same way.
 */
function parseCsv(text: string, firstLine: number, table: CsvTable): CsvRow[] {
  const byPosition = (fields: string[]): string[] => fields.map((_, index) => String(index));
  const columns =
    table.header === null
      ? (fields: string[]): string[] => {
          table.header = { line: firstLine + (text.match(/^(?:[ \t]*\n)*/)?.[0].match(/\n/g)?.length ?? 0), fields, fitsHeader: true };
          return byPosition(fields);
        }
      : byPosition(table.header.fields);
  // With `info`, each record comes as { record, info }; `info.error` is set only on a misfit row.
  const parsed = parse<{ record: Record<string, string>; info: Omit<InfoRecord, 'error'> & { error?: CsvError } }>(text, {
    bom: true,
    columns,
    info: true,
    relax_column_count: true,
    skip_empty_lines: true,
    trim: true,
  });
  const width = table.header?.fields.length ?? 0;
  return parsed.map(({ record, info }) => {
    const misfit = info.error instanceof CsvError && info.error.code === 'CSV_RECORD_INCONSISTENT_COLUMNS' ? (info.error['record'] as string[]) : undefined;
    const fields = misfit ?? Array.from({ length: width }, (_, index) => record[String(index)] ?? '');
    // info.lines is the line a record ends on; a quoted field may span lines.
    return {
      fields,
      fitsHeader: misfit === undefined,
      line: firstLine - 1 + info.lines - fields.reduce((n, field) => n + (field.match(/\n/g)?.length ?? 0), 0),
    };
  });
}

function take(raw: unknown, line: number, result: EventsFileResult): void {
  const verdict = checkEventRecord(raw);
  if (verdict.ok) result.records.push({ ...verdict.value, line });
  else result.rejects.push(fromError(line, verdict.error));
}

function fromError(line: number, error: SyncError): EventLineReject {
  const reason = asReason(error.reason);
  return reason === null ? { line, code: error.code, message: error.message } : { line, code: error.code, message: error.message, reason };
}

function reject(line: number, code: ErrorCode, reason: Reason): EventLineReject {
  return { line, code, message: renderReason('en', reason), reason };
}
