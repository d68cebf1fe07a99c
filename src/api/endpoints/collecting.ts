/** 4.1 POST /v1/delivery/collecting: the driver is on the way to collect the package. */
import { isRecord } from '../errors.js';
import { readJson, type HttpResponse } from '../http.js';
import type { EndpointRequest } from '../types.js';

export interface CollectingInput {
  deliveryId: string;
  /** Sent as given: normalising event_at is the queue's job, not the client's. */
  eventAt: string;
}

export function buildCollectingRequest(input: CollectingInput): EndpointRequest {
  return {
    endpoint: 'collecting',
    method: 'POST',
    path: '/v1/delivery/collecting',
    keys: 'carrier-and-seller-group',
    body: { delivery_id: input.deliveryId, event_at: input.eventAt },
  };
}

const isSuccessBody = (value: unknown): value is { success: boolean } => isRecord(value) && typeof value['success'] === 'boolean';

/**
 * 200 {success:false} is how the API answers an event_at it has already seen (§3 rule 1): the
 * event is a duplicate, not a failure, so it is returned as `isProcessed: false`, not thrown.
 */
export function readCollectingResponse(response: HttpResponse): { isProcessed: boolean } {
  return { isProcessed: readJson(response, isSuccessBody).success };
}
