/**
 * Queues collecting events through the path `carrier-sync enqueue collecting` uses: the record is
 * checked (checkEventRecord), becomes a job with a `cli:<uuid>` source, and goes through
 * enqueueEvents (event_at claim, order set, job). The CLI passes one record per call; here the
 * same function takes them in chunks, which only saves round trips.
 */
import { randomUUID } from 'node:crypto';
import { enqueueEvents, type EnqueueDeps } from '../../../src/queue/enqueue.js';
import { collectingJobOf } from '../../../src/store/payloads.js';
import { checkEventRecord } from '../../../src/validate/event-record.js';
import type { EventLine } from './inputs.js';

export async function enqueueLikeCli(deps: EnqueueDeps, rows: readonly EventLine[], chunk = 500): Promise<{ queued: number; duplicates: number }> {
  let queued = 0;
  let duplicates = 0;
  const receivedAt = new Date().toISOString();
  for (let i = 0; i < rows.length; i += chunk) {
    const jobs = rows.slice(i, i + chunk).map((row) => {
      const verdict = checkEventRecord(row);
      if (!verdict.ok) throw verdict.error;
      return collectingJobOf(verdict.value, `cli:${randomUUID()}`, { source: 'cli' }, receivedAt);
    });
    const result = await enqueueEvents(deps, jobs);
    queued += result.jobIds.length;
    duplicates += result.duplicates.length;
  }
  return { queued, duplicates };
}
