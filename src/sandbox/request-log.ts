/**
 * What the sandbox saw, one entry per answered (or reset) request, for test assertions.
 * Entries get their `seq` when they are recorded, so the log is ordered by seq and `since`
 * works across clear(). Only the last LOG_CAPACITY entries are kept. Keys are never stored:
 * `keyId` names the carrier or seller group whose key was presented.
 */

export type SandboxEndpoint = 'collecting' | 'cte' | 'label' | 'webhook' | 'order-events' | 'order-get' | 'order-update' | 'quotation' | 'control' | 'unknown';

export interface SandboxRequest {
  seq: number;
  /** Epoch ms when the request was received. */
  at: number;
  method: string;
  path: string;
  endpoint: SandboxEndpoint;
  /** Id of the carrier or seller group whose key was presented; never the raw key. */
  keyId: string | null;
  /** HTTP status sent; 0 when the socket was destroyed without an answer. */
  status: number;
  durationMs: number;
  deliveryId?: string;
  eventAt?: string;
  /** A collecting call whose event_at repeated an earlier event of the delivery. */
  isRepeat?: boolean;
  fault?: 'error' | 'reset' | 'storm' | 'unauthorized' | 'rate-limited';
  bodyBytes: number;
  /** sha256 (hex) of the decoded PDF bytes of an accepted label. */
  labelSha256?: string;
  /** The W3C traceparent header the request carried (the caller's trace: tracing tools join ours to it). */
  traceparent?: string;
}

export type PendingRequest = Omit<SandboxRequest, 'seq' | 'status' | 'durationMs'>;

export const LOG_CAPACITY = 200_000;

export class RequestLog {
  #entries: SandboxRequest[] = [];
  #nextSeq = 1;

  record(pending: PendingRequest, status: number, finishedAt: number): SandboxRequest {
    const entry: SandboxRequest = { seq: this.#nextSeq++, ...pending, status, durationMs: finishedAt - pending.at };
    this.#entries.push(entry);
    // Trim in batches so recording stays O(1) amortised.
    if (this.#entries.length > LOG_CAPACITY * 1.25) this.#entries = this.#entries.slice(-LOG_CAPACITY);
    return entry;
  }

  /** Entries with seq greater than `sinceSeq`, oldest first. */
  list(sinceSeq = 0): SandboxRequest[] {
    const kept = this.#entries.length > LOG_CAPACITY ? this.#entries.slice(-LOG_CAPACITY) : this.#entries;
    const first = kept[0];
    if (first === undefined) return [];
    const skip = Math.max(0, Math.min(kept.length, sinceSeq - first.seq + 1));
    return kept.slice(skip);
  }

  clear(): void {
    this.#entries = [];
  }
}
