/** 4.2 PUT /v1/delivery/cte: replaces the CT-e XML of one delivery. */
import type { HttpResponse } from '../http.js';
import type { EndpointRequest } from '../types.js';

export interface CteInput {
  deliveryId: string;
  /** The XML text; JSON encoding escapes its double quotes as §4.2 asks. */
  xml: string;
}

export function buildCteRequest(input: CteInput): EndpointRequest {
  return {
    endpoint: 'cte',
    method: 'PUT',
    path: '/v1/delivery/cte',
    keys: 'carrier-and-seller-group',
    body: { delivery_id: input.deliveryId, xml_cte_string: input.xml },
  };
}

/**
 * 200 carries an empty object. Any 2xx means the API took the XML, so the body is not read: a
 * replacement that succeeded must not be resent because of a cosmetic body.
 */
export function readCteResponse(_response: HttpResponse): void {}
