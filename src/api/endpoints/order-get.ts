/** 4.6 GET /seller-group/v1/orders/{order_id}: one order by its internal id. */
import { isRecord } from '../errors.js';
import { encodePathParam, readJson, type HttpResponse } from '../http.js';
import type { EndpointRequest, Order } from '../types.js';

export function buildOrderGetRequest(orderId: string): EndpointRequest {
  return {
    endpoint: 'order-get',
    method: 'GET',
    path: `/seller-group/v1/orders/${encodePathParam(orderId)}`,
    keys: 'seller-group',
  };
}

/** Only the outline is checked (an object with a string id); the fields pass through as sent. */
const isOrder = (value: unknown): value is Order => isRecord(value) && typeof value['id'] === 'string';

export function readOrderGetResponse(response: HttpResponse): Order {
  return readJson(response, isOrder);
}
