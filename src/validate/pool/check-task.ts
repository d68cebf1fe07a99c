/**
 * A check thread's task (the module the pool's threads load): one file's check, with the
 * validators of validate/ as they are, and its outcome as plain data. It tells the event loop
 * when it begins, and which OS thread it is, so that the file's CPU budget is read on this thread's
 * clock from then on, not counting the thread's start-up or a wait in the pool (cpu-budget.ts).
 */
import { parentPort, threadId } from 'node:worker_threads';
import { checkCte } from '../cte.js';
import { parseEventsFile } from '../events-file.js';
import { checkLabel } from '../label.js';
import { ownThreadId } from './cpu-budget.js';
import { toWire, type CheckOutcome, type CheckTask } from './wire.js';

/** The message a thread posts when it begins a task: the task's id, and its OS thread id (its CPU clock). */
export interface CheckStarted {
  checkStarted: number;
  tid: number | null;
}

const tid = ownThreadId();

export default async function runCheck(task: CheckTask & { id: number }): Promise<CheckOutcome> {
  parentPort?.postMessage({ checkStarted: task.id, tid } satisfies CheckStarted);
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  if (task.kind === 'events') {
    const value = parseEventsFile(bytes.toString('utf8'), task.format, { maxLineBytes: task.maxLineBytes });
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
