/** 4.8 POST /v1/quotation/orders (legacy quotation): freight for orders from one seller branch. */
import { isRecord } from '../errors.js';
import { readJson, type HttpResponse } from '../http.js';
import type { EndpointRequest, QuotationRequest, QuotationResponse } from '../types.js';

export function buildQuotationRequest(input: QuotationRequest): EndpointRequest {
  return {
    endpoint: 'quotation',
    method: 'POST',
    path: '/v1/quotation/orders',
    keys: 'seller-group',
    body: {
      seller_identifier: input.sellerIdentifier,
      orders: input.orders.map((order) => ({
        identifier: order.identifier,
        amount: order.amount,
        destination_zip_code: order.destinationZipCode,
        volumes: order.volumes.map((volume) => ({
          weight: volume.weight,
          height: volume.height,
          length: volume.length,
          width: volume.width,
        })),
      })),
    },
  };
}

/** Only the outline is checked (an object with an `orders` array); the fields pass through as sent. */
const isQuotation = (value: unknown): value is QuotationResponse => isRecord(value) && Array.isArray(value['orders']);

export function readQuotationResponse(response: HttpResponse): QuotationResponse {
  return readJson(response, isQuotation);
}
