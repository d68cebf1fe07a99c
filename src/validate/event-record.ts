import { SyncError } from '../errors.js';
import { reasonOf, refusal } from '../i18n/reason.js';
import { parseEventAt } from './event-at.js';
import { accept, reject, type Verdict } from './verdict.js';

/** One driver collecting event, checked: what `POST /v1/delivery/collecting` will be sent. */
export interface CollectingEventRecord {
  deliveryId: string;
  /** event_at exactly as given, for reports. */
  eventAt: string;
  /** The dedup key: the same instant in any offset or precision gives the same key. */
  instantKey: string;
  epochMs: number;
  /** event_at as sent to the API (UTC). */
  wire: string;
}

/**
 * Delivery ids go into spool file names, Redis keys and URLs, so we allow only a safe charset:
 * no dots, slashes or spaces (no path tricks, no ambiguity with the `__` external-id separator's parts).
 */
export const DELIVERY_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
export const DELIVERY_ID_RULE = '1–128 characters of A–Z, a–z, 0–9, "_" and "-"';

export function checkDeliveryId(id: string): SyncError | null {
  if (DELIVERY_ID_PATTERN.test(id)) return null;
  const shown = id.length > 60 ? `${id.slice(0, 60)}…` : id;
  return refusal('EVENT_BAD_DELIVERY_ID', reasonOf('reason.event.badDeliveryId', { value: JSON.stringify(shown) }), { params: { deliveryId: shown } });
}

export interface EventRecordOptions {
  /** The warehouse's IANA zone for an event_at written without an offset (events files only); null: refused. */
  timeZone?: string | null;
}

/** Checks one raw record (a parsed JSON object or a CSV row keyed by its header); extra fields are ignored. */
export function checkEventRecord(raw: unknown, options: EventRecordOptions = {}): Verdict<CollectingEventRecord> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return reject(refusal('EVENT_BAD_RECORD', reasonOf('reason.event.notObject')));
  }
  const record = raw as Record<string, unknown>;
  const deliveryId = record['delivery_id'];
  const eventAt = record['event_at'];
  if (typeof deliveryId !== 'string') return reject(missing('delivery_id', deliveryId));
  if (typeof eventAt !== 'string') return reject(missing('event_at', eventAt));
  const idError = checkDeliveryId(deliveryId);
  if (idError !== null) return reject(idError);
  const instant = parseEventAt(eventAt, { timeZone: options.timeZone ?? null });
  if (instant instanceof SyncError) return reject(instant);
  return accept({ deliveryId, eventAt, ...instant });
}

function missing(field: string, value: unknown): SyncError {
  const reason =
    value === undefined
      ? reasonOf('reason.event.fieldMissing', { field })
      : reasonOf('reason.event.fieldNotString', { field, type: value === null ? 'null' : typeof value });
  return refusal('EVENT_BAD_RECORD', reason);
}
