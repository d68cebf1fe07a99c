/**
 * One file's check, and its outcome as plain data: the body of a check thread's task, and what the
 * event loop runs itself for a file too small to be worth the hand-over (check-pool.ts).
 */
import { threadId } from 'node:worker_threads';
import { checkCte } from '../cte.js';
import { decodeEventsBytes, parseEventsFile } from '../events-file.js';
import { checkLabel } from '../label.js';
import { toWire, type CheckOutcome, type CheckTask } from './wire.js';

export async function checkNow(task: CheckTask): Promise<CheckOutcome> {
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  if (task.kind === 'events') {
    const value = parseEventsFile(decodeEventsBytes(bytes), task.format, { maxLineBytes: task.maxLineBytes, timeZone: task.timeZone });
    return { ok: true, kind: 'events', value, warnings: [], threadId };
  }
  if (task.kind === 'cte') {
    const verdict = checkCte(bytes, { maxBytes: task.maxBytes });
    if (!verdict.ok) return { ok: false, error: toWire(verdict.error), threadId };
    const { xml, declaredEncoding } = verdict.value;
    return { ok: true, kind: 'cte', value: { xml, declaredEncoding }, warnings: verdict.warningReasons, threadId };
  }
  const verdict = await checkLabel(bytes, { maxBytes: task.maxBytes });
  if (!verdict.ok) return { ok: false, error: toWire(verdict.error), threadId };
  const { pdf, paddingBytes, pdfVersion, pageCount } = verdict.value;
  const sent = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.length);
  const value = { pdfBase64: sent.toString('base64'), byteLength: sent.length, paddingBytes, pdfVersion, pageCount };
  return { ok: true, kind: 'label', value, warnings: verdict.warningReasons, threadId };
}
