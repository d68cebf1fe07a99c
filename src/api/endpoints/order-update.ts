/** 4.7 PUT /seller-group/v1/orders/{order_id}: invoice number and/or access key of an order. */
import { isRecord } from '../errors.js';
import { encodePathParam, readJson, type HttpResponse } from '../http.js';
import type { EndpointRequest } from '../types.js';

export interface OrderUpdateInput {
  invoiceNumber?: string;
  accessKey?: string;
}

/**
 * Only the fields given are sent: the API leaves the others unchanged. With neither, the request
 * still goes out and the API answers 400 INVALID_PARAMS; the client does not second-guess it.
 */
export function buildOrderUpdateRequest(orderId: string, input: OrderUpdateInput): EndpointRequest {
  const body: Record<string, string> = {};
  if (input.invoiceNumber !== undefined) body['invoice_number'] = input.invoiceNumber;
  if (input.accessKey !== undefined) body['access_key'] = input.accessKey;
  return {
    endpoint: 'order-update',
    method: 'PUT',
    path: `/seller-group/v1/orders/${encodePathParam(orderId)}`,
    keys: 'seller-group',
    body,
  };
}

const isSuccessBody = (value: unknown): value is { success: boolean } => isRecord(value) && typeof value['success'] === 'boolean';

export function readOrderUpdateResponse(response: HttpResponse): { success: boolean } {
  return { success: readJson(response, isSuccessBody).success };
}
