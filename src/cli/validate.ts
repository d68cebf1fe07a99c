import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { print } from './shared.js';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('offline check of label PDFs, CT-e XMLs and events files; prints each verdict; exit 1 if any is invalid')
    .argument('<file...>', 'files to check (.pdf, .xml, .ndjson, .jsonl, .csv)')
    .option('--json', 'print JSON')
    .action(async (files: string[], options: { json?: boolean }, command: Command) => {
      const config = loadConfig({ env: process.env, configPath: command.optsWithGlobals<{ config?: string }>().config });
      const verdicts = [];
      for (const file of files) verdicts.push({ file, ...(await verdictOf(file, config.spool)) });
      if (options.json === true) print(JSON.stringify(verdicts, null, 2));
      else
        for (const v of verdicts)
          print(
            `${v.ok ? 'valid  ' : 'INVALID'} ${v.file}${v.ok ? '' : `\n        ${v.code}: ${v.message}`}${v.notes.map((n) => `\n        note: ${n}`).join('')}`,
          );
      if (verdicts.some((v) => !v.ok)) process.exitCode = 1;
    });
}

interface FileVerdict {
  ok: boolean;
  code?: string;
  message?: string;
  notes: string[];
}

async function verdictOf(file: string, spool: { maxLabelBytes: number; maxCteBytes: number; maxEventLineBytes: number }): Promise<FileVerdict> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    return { ok: false, code: 'UNREADABLE', message: (error as Error).message, notes: [] };
  }
  const name = basename(file).toLowerCase();
  const { checkCte, checkLabel, eventsFormatOf, parseEventsFile } = await import('../validate/index.js');
  if (name.endsWith('.pdf')) {
    const v = await checkLabel(bytes, { maxBytes: spool.maxLabelBytes });
    return v.ok
      ? { ok: true, notes: [`PDF ${v.value.pdfVersion}, ${v.value.pageCount} page(s)`, labelEndNote(v.value.paddingBytes), ...v.warnings] }
      : { ok: false, code: v.error.code, message: v.error.message, notes: [] };
  }
  if (name.endsWith('.xml')) {
    const v = checkCte(bytes, { maxBytes: spool.maxCteBytes });
    if (!v.ok) return { ok: false, code: v.error.code, message: v.error.message, notes: [] };
    const declared = v.value.declaredEncoding;
    const encodingNote = declared === null ? [] : [`declared ${declared}: sent as UTF-8, with its declaration saying UTF-8 (nothing else changed)`];
    return { ok: true, notes: [...encodingNote, ...v.warnings] };
  }
  const format = eventsFormatOf(name);
  if (format !== null) {
    const result = parseEventsFile(bytes.toString('utf8'), format, { maxLineBytes: spool.maxEventLineBytes });
    const notes = [`${result.records.length} valid record(s)`, ...result.rejects.map((r) => `line ${r.line}: ${r.code}: ${r.message}`)];
    return result.rejects.length === 0
      ? { ok: true, notes }
      : { ok: false, code: 'EVENT_BAD_RECORD', message: `${result.rejects.length} invalid line(s)`, notes };
  }
  return { ok: false, code: 'SPOOL_BAD_NAME', message: 'unknown file type: expected .pdf, .xml, .ndjson, .jsonl or .csv', notes: [] };
}

/** Which end a valid label has: exactly at %%EOF (and a line end), or padding after it that is not sent. */
function labelEndNote(paddingBytes: number): string {
  return paddingBytes === 0 ? 'ends with %%EOF' : `sent without ${paddingBytes} bytes of padding after %%EOF (NUL, space, tab, CR, LF or form feed)`;
}
