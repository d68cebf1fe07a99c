/** 4.5 GET …/seller/identifier/{seller_identifier}/orders/external_id/{external_id}/events */
import { isRecord } from '../errors.js';
import { encodePathParam, readJson, type HttpResponse } from '../http.js';
import type { EndpointRequest, OrderEventsView } from '../types.js';

export function buildOrderEventsRequest(sellerIdentifier: string, externalId: string): EndpointRequest {
  const seller = encodePathParam(sellerIdentifier);
  const external = encodePathParam(externalId);
  return {
    endpoint: 'order-events',
    method: 'GET',
    path: `/seller-group/v1/seller/identifier/${seller}/orders/external_id/${external}/events`,
    keys: 'seller-group',
  };
}

/** Only the outline is checked (an array of orders, each with its deliveries); fields pass through. */
const isOrderEventsList = (value: unknown): value is OrderEventsView[] =>
  Array.isArray(value) && value.every((item) => isRecord(item) && Array.isArray(item['deliveries']));

export function readOrderEventsResponse(response: HttpResponse): OrderEventsView[] {
  return readJson(response, isOrderEventsList);
}
