/**
 * A check thread's task (the module the pool's threads load): one file's check, with the
 * validators of validate/ as they are, and its outcome as plain data. It notes on the lane's board
 * (check-board.ts) when it begins a file, with its OS thread id and CPU clock, so that the file's
 * CPU budget is read on this thread's clock from then on, not counting the thread's start-up.
 */
import { threadId, workerData } from 'node:worker_threads';
import { checkCte } from '../cte.js';
import { parseEventsFile } from '../events-file.js';
import { checkLabel } from '../label.js';
import { boardOf, markBegun, type SharedBoard } from './check-board.js';
import { ownThreadId, threadCpuMs } from './cpu-budget.js';
import { toWire, type CheckOutcome, type CheckTask } from './wire.js';

const board = boardOf((workerData as { board: SharedBoard }).board);
const tid = ownThreadId();

export default async function runCheck(task: CheckTask & { id: number }): Promise<CheckOutcome> {
  markBegun(board, threadId, task.id, { tid, startCpuMs: tid === null ? null : threadCpuMs(tid), startWallMs: Date.now() });
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
