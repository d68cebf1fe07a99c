/**
 * The journey steps of a job's claim, enqueue and replay (journey/journey.ts holds the layout): what a claimed
 * file, a queued document and a received event record. Pure: entries in, written by the caller
 * in a round trip it makes anyway.
 */
import type { StoredReason } from '../errors.js';
import { eventRef, KIND_CODE, SELF, type JourneyEntry, type StoredStep } from '../journey/journey.js';
import type { CollectingJob, CteJob, LabelJob } from '../store/payloads.js';

/** A file as it was claimed: its whole hash, size and mtime. */
export interface SeenFile {
  sha256: string;
  size: number;
  mtimeMs: number;
}

/** A generation (mtime µs . claim µs, 35 characters) in base 36 (about 23): the reader turns it back. */
export function shortGeneration(generation: string | undefined): string | undefined {
  if (generation === undefined || generation === '') return undefined;
  return generation
    .split('.')
    .map((part) => Number(part).toString(36))
    .join('.');
}

type Document = LabelJob | CteJob;

/**
 * A document's steps name its version: the first 8 hex of its sha256 (the seen step has all 64).
 * The seen and queued steps name its file too; the reader gives the others the file of their version.
 */
export function documentStep(job: Pick<Document, 'kind' | 'origin'>, s: string, withFile = false): StoredStep {
  return { k: KIND_CODE[job.kind], s, ...(withFile ? { f: job.origin.fileName } : {}), h: job.origin.contentId.slice(0, 8) };
}

export const documentSteps = {
  /** Seen (name, size, hash, mtime), claimed (by this process), found valid: one file claimed from an inbox. */
  // One record for the three steps: a seen record that names who claimed it (`w`) was claimed by
  // that process and found valid (only a valid file reaches the queue); the reader tells all three.
  claimed(job: Document, seen: SeenFile): JourneyEntry[] {
    return [
      {
        deliveryId: job.deliveryId,
        step: {
          ...documentStep(job, 'seen', true),
          h: seen.sha256,
          z: seen.size,
          m: Math.round(seen.mtimeMs),
          w: SELF,
          // The file as seen holds padding after %%EOF that is not sent: the valid step says so.
          ...(job.kind === 'label' && job.paddingBytes !== undefined && job.paddingBytes > 0 ? { p: job.paddingBytes } : {}),
        },
        file: { name: job.origin.fileName, sha256: seen.sha256 },
      },
    ];
  },
  /** Queued (with its generation), or decided at once: superseded by a newer document, or the API holds it already. */
  /** `isSeen`: its seen step was recorded (and names the file); a backfilled document's queued step names it. */
  decided(job: Document, s: 'queued' | 'superseded' | 'already-accepted', isSeen = true): JourneyEntry {
    const g = shortGeneration(job.generation);
    return { deliveryId: job.deliveryId, step: { ...documentStep(job, s, !isSeen), ...(g === undefined || s === 'already-accepted' ? {} : { g }) } };
  },
  replayed(job: Document, by: 'cli' | 'ui' | 're-drop'): JourneyEntry {
    return { deliveryId: job.deliveryId, step: { ...documentStep(job, 'replayed'), by } };
  },
};

/**
 * A file refused before it was queued: seen (when it was read) and refused with its code and
 * reason. Kept under the delivery its name carries; a name that carries none is kept under
 * `?<file name>` (found by `--file`).
 */
export function refusedSteps(
  kind: 'labels' | 'cte' | 'events',
  fileName: string,
  report: { code: string; message: string; deliveryId?: string | null; reasonSource?: StoredReason | undefined },
  seen?: SeenFile,
): JourneyEntry[] {
  const deliveryId = report.deliveryId ?? `?${fileName}`;
  const k = kind === 'labels' ? 'l' : kind === 'cte' ? 'c' : 'e';
  const file = { name: fileName, sha256: seen?.sha256 ?? '' };
  return [
    ...(seen === undefined
      ? []
      : [{ deliveryId, step: { k, s: 'seen', f: fileName, h: seen.sha256, z: seen.size, m: Math.round(seen.mtimeMs) } satisfies StoredStep, file }]),
    {
      deliveryId,
      step: { k, s: 'refused', f: fileName, c: report.code, r: report.message, ...(report.reasonSource === undefined ? {} : { rk: report.reasonSource }) },
      ...(seen === undefined ? { file } : {}),
    },
  ];
}

/** Where an event came from, as the journey names it. */
function sourceOf(event: CollectingJob): Pick<StoredStep, 'src' | 'f' | 'l'> {
  const { origin } = event;
  switch (origin.source) {
    case 'spool':
      // A file name (`f`) says the source is a file.
      return { f: origin.fileName, l: origin.line };
    case 'http':
      return { src: 'POST /events', ...(origin.index === undefined ? {} : { l: origin.index }) };
    case 'cli':
      return { src: 'enqueue' };
    case 'pull':
      return { src: 'pull' };
    case 'backfill':
      return { src: 'backfill', ...(origin.index === undefined ? {} : { l: origin.index }) };
  }
}

export const eventSteps = {
  /** Received (from where), then a duplicate of an earlier record, or held until it is due. */
  received(event: CollectingJob, isDuplicate: boolean, nowMs: number): JourneyEntry[] {
    const { deliveryId } = event;
    const i = eventRef(event.instantKey);
    const origin = event.origin;
    const file = origin.source === 'spool' ? { name: origin.fileName, sha256: origin.batchId.slice(0, 16) } : undefined;
    const entries: JourneyEntry[] = [
      { deliveryId, step: { k: 'e', s: 'received', e: event.eventAt, i, ...sourceOf(event) }, ...(file === undefined ? {} : { file }) },
    ];
    if (isDuplicate) entries.push({ deliveryId, step: { k: 'e', s: 'duplicate', e: event.eventAt, i } });
    else if (event.epochMs > nowMs) entries.push({ deliveryId, step: { k: 'e', s: 'held', i, d: event.epochMs } });
    return entries;
  },
  replayed(event: CollectingJob, by: 'cli' | 'ui'): JourneyEntry {
    return { deliveryId: event.deliveryId, step: { k: 'e', s: 'replayed', i: eventRef(event.instantKey), by } };
  },
};
