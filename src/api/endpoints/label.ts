/** 4.3 POST /v1/delivery/mail-label: the shipping label PDF of one delivery. */
import type { HttpResponse } from '../http.js';
import type { EndpointRequest } from '../types.js';

export interface LabelInput {
  deliveryId: string;
  /** Sent as given; the optional `data:application/pdf;base64,` prefix is never added. */
  pdfBase64: string;
  externalId?: string | null;
}

export function buildLabelRequest(input: LabelInput): EndpointRequest {
  const body: Record<string, string> = { delivery_id: input.deliveryId, base64: input.pdfBase64 };
  // external_id is optional on the wire: absent rather than null when we have none.
  if (input.externalId !== undefined && input.externalId !== null) body['external_id'] = input.externalId;
  return { endpoint: 'label', method: 'POST', path: '/v1/delivery/mail-label', keys: 'carrier', body };
}

/** 200 carries an empty object; any 2xx means the label is attached (a resend replaces it). */
export function readLabelResponse(_response: HttpResponse): void {}
