import { refusal } from '../i18n/reason.js';
import type { MessageKey } from '../i18n/translate.js';
import { DELIVERY_ID_PATTERN } from './event-record.js';
import { accept, reject, type Verdict } from './verdict.js';

/**
 * Spool inbox names carry the ids: labels `<delivery_id>.pdf` or `<delivery_id>__<external_id>.pdf`,
 * CT-e `<delivery_id>.xml`. The first `__` splits a label name, so a delivery id that itself holds
 * `__` can only be used in a label name that also has an external id after it.
 */

export type SpoolKind = 'labels' | 'cte';
export type EventsFormat = 'ndjson' | 'csv';
export interface SpoolName {
  deliveryId: string;
  externalId: string | null;
}

const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
const EXTENSION: Readonly<Record<SpoolKind, string>> = { labels: '.pdf', cte: '.xml' };

export function parseSpoolName(kind: SpoolKind, fileName: string): Verdict<SpoolName> {
  const extension = EXTENSION[kind];
  if (!fileName.toLowerCase().endsWith(extension) || fileName.length === extension.length) {
    return bad(kind, fileName, 'reason.spool.extension', { extension });
  }
  const stem = fileName.slice(0, -extension.length);
  const split = kind === 'labels' ? stem.indexOf('__') : -1;
  const deliveryId = split < 0 ? stem : stem.slice(0, split);
  const externalId = split < 0 ? null : stem.slice(split + 2);
  if (!DELIVERY_ID_PATTERN.test(deliveryId)) {
    return bad(kind, fileName, 'reason.spool.deliveryId', { value: JSON.stringify(deliveryId) });
  }
  if (externalId !== null && (!EXTERNAL_ID_PATTERN.test(externalId) || externalId.includes('..'))) {
    return bad(kind, fileName, 'reason.spool.externalId', { value: JSON.stringify(externalId) });
  }
  return accept({ deliveryId, externalId });
}

/** Names that writers use while a file is not finished; they are left alone until renamed. */
export function isIgnoredName(fileName: string): boolean {
  const lower = fileName.toLowerCase();
  return lower.startsWith('.') || lower.endsWith('.tmp') || lower.endsWith('.part') || lower.endsWith('.partial');
}

function bad(kind: SpoolKind, fileName: string, key: MessageKey, values: Record<string, string>): Verdict<SpoolName> {
  const shown = fileName.length > 80 ? `${fileName.slice(0, 80)}…` : fileName;
  // The message shows the name's shape from `kind` (a select), in the reader's language.
  const reason = { key, values: { ...values, kind, file: shown } };
  return reject(refusal('SPOOL_BAD_NAME', reason, { params: { kind, fileName: shown } }));
}

/** An events file's format from its name (.ndjson, .jsonl or .csv); null for any other name. */
export function eventsFormatOf(fileName: string): EventsFormat | null {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson';
  if (lower.endsWith('.csv')) return 'csv';
  return null;
}
