/**
 * The scheduled pull of collecting events from a carrier system: GET a URL that returns NDJSON or a
 * JSON array of `{delivery_id, event_at}`; each record goes through the same checks and the same
 * enqueue (and event_at dedup) as files and POST /events. Pulling an overlapping window again is
 * harmless: the instants already taken count as duplicates and are not sent.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../../log.js';
import { enqueueEvents } from '../../queue/enqueue.js';
import { collectingJobOf } from '../../store/payloads.js';
import { checkEventRecord } from '../../validate/event-record.js';
import type { Context } from '../context.js';
import { liveSecret } from '../../config/secret-file.js';

const TIMEOUT_MS = 30_000;

export interface PullResult {
  records: number;
  queued: number;
  duplicates: number;
  invalid: number;
}

export async function pullEvents(ctx: Context, logger: Logger): Promise<PullResult | null> {
  const source = ctx.config.schedules.eventsPull;
  if (source.url === null) {
    logger.warn('eventsPull is scheduled but schedules.eventsPull.url is not set');
    return null;
  }
  const headers: Record<string, string> = { accept: 'application/x-ndjson, application/json' };
  // Given as CARRIER_SYNC_EVENTS_PULL_TOKEN_FILE, read again at each pull: a rotated token reaches the next one (issue 45).
  if (source.token !== null) headers[source.authHeader] = liveSecret(process.env, 'CARRIER_SYNC_EVENTS_PULL_TOKEN', source.token).refresh();
  const response = await fetch(source.url, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!response.ok) throw new Error(`events pull: ${source.url} answered HTTP ${response.status}`);
  const text = await response.text();
  const raw = parseBody(text);
  const batchId = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const receivedAt = new Date(ctx.clock.now()).toISOString();
  const jobs = [];
  let invalid = 0;
  for (const [index, record] of raw.entries()) {
    const verdict = checkEventRecord(record);
    if (verdict.ok) jobs.push(collectingJobOf(verdict.value, `pull:${batchId}:${index}`, { source: 'pull', index }, receivedAt));
    else {
      invalid += 1;
      logger.warn({ index, code: verdict.error.code, reason: verdict.error.message }, 'pulled event refused');
    }
  }
  const result = await enqueueEvents(ctx.enqueueDeps, jobs);
  const summary = { records: raw.length, queued: result.jobIds.length, duplicates: result.duplicates.length, invalid };
  logger.info(summary, 'collecting events pulled');
  return summary;
}

function parseBody(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  if (trimmed.startsWith('[')) {
    const value: unknown = JSON.parse(trimmed);
    return Array.isArray(value) ? value : [value];
  }
  return trimmed
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line): unknown => {
      try {
        return JSON.parse(line);
      } catch {
        return { line };
      }
    });
}
