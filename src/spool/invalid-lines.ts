/**
 * An events file read with invalid lines and valid ones is archived (its valid lines are sent), so
 * nothing would show it but the lines report in failed/events/ (one with no valid record goes to
 * failed/ whole, and the row and the record say nothing of it was sent). This makes it findable: a row in the overview's
 * latest refusals (its name, how many lines, the first reasons; not counted as a refused file) and
 * a record that `history --file` and the history page's file search read. One round trip.
 */
import { renderReason } from '../i18n/reason.js';
import { linesReason, recordInvalidLines, type InvalidLineRecord } from '../journey/events-file-lines.js';
import type { EnqueueDeps } from '../queue/enqueue.js';
import { addRefusalNote } from '../store/activity.js';

/** `valid`: the file's valid records (queued or duplicates). */
export async function noteInvalidLines(deps: EnqueueDeps, fileName: string, rejects: readonly InvalidLineRecord[], valid: number): Promise<void> {
  if (rejects.length === 0) return;
  const atMs = deps.clock.now();
  const at = new Date(atMs).toISOString();
  const reason = linesReason(rejects, valid);
  const chain = addRefusalNote(deps.redis.multi(), deps.keys, {
    at,
    kind: 'events',
    file: fileName,
    code: rejects[0]!.code,
    reason: renderReason('en', reason),
    reasonSource: reason,
  });
  if (deps.historyTtlSec !== undefined) recordInvalidLines(chain, deps.keys, { at, file: fileName, count: rejects.length, valid, lines: [...rejects] }, atMs, deps.historyTtlSec);
  await chain.exec();
}
