/**
 * What `validate` does once its flags are read: each file's verdict, printed in the reader's
 * language. Apart from validate.ts (the flags) so that the catalogs and the ICU formatter load only
 * when the command runs, not in every process of the binary (issue 29).
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Config } from '../config/schema.js';
import { describeFailure, renderReason } from '../i18n/reason.js';
import { say, translator, type Lang, type Translate } from '../i18n/translate.js';
import type { CheckPool } from '../validate/pool/check-pool.js';
import { cliLogger, print } from './shared.js';

/** Prints each file's verdict (text or JSON); exit code 1 if any is invalid. */
export async function printVerdicts(files: string[], config: Readonly<Config>, isJson: boolean): Promise<void> {
  const t = translator(config.lang);
  // The daemon's path: each file checked on a check thread, within the same budgets.
  const { createCheckPool } = await import('../validate/pool/check-pool.js');
  const checks = createCheckPool(config.checks, cliLogger(config));
  const verdicts = [];
  try {
    for (const file of files) verdicts.push({ file, ...(await verdictOf(file, config.spool, checks, config.lang)) });
  } finally {
    await checks.close();
  }
  if (isJson) print(JSON.stringify(verdicts, null, 2));
  else for (const v of verdicts) print(textOf(v, t));
  if (verdicts.some((v) => !v.ok)) process.exitCode = 1;
}

interface FileVerdict {
  ok: boolean;
  code?: string;
  /** English, as in logs and `.error.json` `message`. */
  message?: string;
  /** The message in CARRIER_SYNC_LANG. */
  reason?: string;
  notes: string[];
}

/** `valid   <file>` or `INVALID <file>` with its code and reason, then its notes; in CARRIER_SYNC_LANG. */
function textOf(v: FileVerdict & { file: string }, t: Translate): string {
  const head = t(v.ok ? 'cli.validate.valid' : 'cli.validate.invalid', { file: v.file });
  const failure = v.ok ? '' : `\n        ${v.code ?? ''}: ${v.reason ?? v.message ?? ''}`;
  return `${head}${failure}${v.notes.map((n) => `\n        ${t('cli.validate.note', { note: n })}`).join('')}`;
}

function failed(lang: Lang, error: { code: string; message: string; reason?: unknown }): FileVerdict {
  return { ok: false, code: error.code, message: error.message, reason: describeFailure(lang, error), notes: [] };
}

type Limits = { maxLabelBytes: number; maxCteBytes: number; maxEventLineBytes: number; eventsTimeZone: string | null };

async function verdictOf(file: string, spool: Limits, checks: CheckPool, lang: Lang): Promise<FileVerdict> {
  const t = translator(lang);
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const message = (error as Error).message;
    return { ok: false, code: 'UNREADABLE', message, reason: t('cli.validate.unreadable', { detail: message }), notes: [] };
  }
  const name = basename(file).toLowerCase();
  const { eventsFormatOf } = await import('../validate/spool-name.js');
  if (name.endsWith('.pdf')) {
    const v = await checks.label(bytes, { maxBytes: spool.maxLabelBytes });
    return v.ok
      ? {
          ok: true,
          notes: [
            t('cli.validate.pdf', { version: v.value.pdfVersion, pages: v.value.pageCount }),
            labelEndNote(v.value.paddingBytes, t),
            ...v.warningReasons.map((w) => renderReason(lang, w)),
          ],
        }
      : failed(lang, v.error);
  }
  if (name.endsWith('.xml')) {
    const v = await checks.cte(bytes, { maxBytes: spool.maxCteBytes });
    if (!v.ok) return failed(lang, v.error);
    const declared = v.value.declaredEncoding;
    const encodingNote = declared === null ? [] : [t('cli.validate.declared', { encoding: declared })];
    return { ok: true, notes: [...encodingNote, ...v.warningReasons.map((w) => renderReason(lang, w))] };
  }
  const format = eventsFormatOf(name);
  if (format !== null) {
    const v = await checks.events(bytes, format, { maxLineBytes: spool.maxEventLineBytes, timeZone: spool.eventsTimeZone });
    if (!v.ok) return failed(lang, v.error);
    const result = v.value;
    const notes = [
      t('cli.validate.validRecords', { count: result.records.length }),
      ...result.rejects.map((r) => t('cli.validate.line', { line: String(r.line), code: r.code, reason: describeFailure(lang, r) })),
    ];
    const count = result.rejects.length;
    return count === 0
      ? { ok: true, notes }
      : { ok: false, code: 'EVENT_BAD_RECORD', message: `${count} invalid line(s)`, reason: say(lang, 'reason.event.fileInvalidLines', { count }), notes };
  }
  const message = 'unknown file type: expected .pdf, .xml, .ndjson, .jsonl or .csv';
  return { ok: false, code: 'SPOOL_BAD_NAME', message, reason: t('cli.validate.unknownType'), notes: [] };
}

/** Which end a valid label has: exactly at %%EOF (and a line end), or padding after it that is not sent. */
function labelEndNote(paddingBytes: number, t: Translate): string {
  return paddingBytes === 0 ? t('cli.validate.endsAtEof') : t('cli.validate.padding', { bytes: String(paddingBytes) });
}
