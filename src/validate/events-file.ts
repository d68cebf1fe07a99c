import { parse } from 'csv-parse/sync';
import type { SyncError} from '../errors.js';
import { type ErrorCode } from '../errors.js';
import { checkEventRecord, type CollectingEventRecord } from './event-record.js';

/**
 * Reads one events file into checked records and per-line rejects. A bad line never holds back the
 * good ones: each line (NDJSON) or record (CSV) is judged alone, and line numbers are 1-based
 * physical lines of the file, so an operator can open the file at the reported line.
 */

export type EventsFormat = 'ndjson' | 'csv';
export type EventLineRecord = CollectingEventRecord & { line: number };
export interface EventLineReject {
  line: number;
  code: ErrorCode;
  message: string;
}
export interface EventsFileResult {
  records: EventLineRecord[];
  rejects: EventLineReject[];
}

export function eventsFormatOf(fileName: string): EventsFormat | null {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson';
  if (lower.endsWith('.csv')) return 'csv';
  return null;
}

export function parseEventsFile(text: string, format: EventsFormat, options: { maxLineBytes: number }): EventsFileResult {
  const result: EventsFileResult = { records: [], rejects: [] };
  // Long lines are blanked, not removed, so the line numbers of the others stay true.
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/).map((line, index) => {
    const bytes = Buffer.byteLength(line, 'utf8');
    if (bytes <= options.maxLineBytes) return line;
    result.rejects.push(reject(index + 1, 'EVENT_LINE_TOO_LONG', `line is ${bytes} bytes, over the limit of ${options.maxLineBytes}; split it or shorten it`));
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
      result.rejects.push(reject(index + 1, 'EVENT_BAD_RECORD', `not valid JSON (${reason}); write one JSON object per line`));
      return;
    }
    take(raw, index + 1, result);
  });
}

function readCsv(lines: string[], result: EventsFileResult): void {
  const rows = csvRows(lines, result);
  const header = rows.shift();
  if (header === undefined) return;
  const names = header.fields.map((name) => name.trim().toLowerCase());
  const idColumn = names.indexOf('delivery_id');
  const atColumn = names.indexOf('event_at');
  if (idColumn < 0 || atColumn < 0) {
    const absent = [idColumn < 0 ? 'delivery_id' : null, atColumn < 0 ? 'event_at' : null].filter((name) => name !== null);
    result.rejects.push(
      reject(header.line, 'EVENT_BAD_RECORD', `the header row lacks ${absent.join(' and ')} (found: ${names.join(', ')}); the first row must name delivery_id and event_at`),
    );
    return;
  }
  for (const row of rows) {
    if (row.fields.every((field) => field === '')) continue;
    take({ delivery_id: row.fields[idColumn], event_at: row.fields[atColumn] }, row.line, result);
  }
}

interface CsvRow {
  line: number;
  fields: string[];
}

/** The whole file in one pass; if it is malformed (an unclosed quote…), each physical line on its own. */
function csvRows(lines: string[], result: EventsFileResult): CsvRow[] {
  try {
    return parseCsv(lines.join('\n'), 1);
  } catch {
    const rows: CsvRow[] = [];
    lines.forEach((line, index) => {
      try {
        rows.push(...parseCsv(line, index + 1));
      } catch (error) {
        const reason = error instanceof Error ? error.message.replace(/ at line \d+/, '') : String(error);
        result.rejects.push(reject(index + 1, 'EVENT_BAD_RECORD', `malformed CSV (${reason}); quote fields that hold commas or quotes`));
      }
    });
    return rows;
  }
}

function parseCsv(text: string, firstLine: number): CsvRow[] {
  const parsed = parse(text, { bom: true, info: true, relax_column_count: true, skip_empty_lines: true, trim: true }) as unknown as Array<{
    record: string[];
    info: { lines: number };
  }>;
  // info.lines is the line a record ends on; a quoted field may span lines.
  return parsed.map(({ record, info }) => ({
    fields: record,
    line: firstLine - 1 + info.lines - record.reduce((n, field) => n + (field.match(/\n/g)?.length ?? 0), 0),
  }));
}

function take(raw: unknown, line: number, result: EventsFileResult): void {
  const verdict = checkEventRecord(raw);
  if (verdict.ok) result.records.push({ ...verdict.value, line });
  else result.rejects.push(fromError(line, verdict.error));
}

function fromError(line: number, error: SyncError): EventLineReject {
  return { line, code: error.code, message: error.message };
}

function reject(line: number, code: ErrorCode, message: string): EventLineReject {
  return { line, code, message };
}
