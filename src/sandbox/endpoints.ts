import type { FastifyRequest } from 'fastify';
import type { SandboxEndpoint } from './request-log.js';

/**
 * The API's routes (api-contract.md §4), with the key each one takes and the error shape (§7)
 * its refusals use. Route modules register these exact URLs, and the request pipeline finds a
 * request's endpoint here, so the table is the one place a route is named.
 */

export type KeyKind = 'carrier' | 'seller-group';
export type ErrorShape = 'A' | 'B' | 'C' | 'D';

export interface EndpointSpec {
  name: Exclude<SandboxEndpoint, 'control' | 'unknown'>;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  url: string;
  key: KeyKind;
  shape: ErrorShape;
}

export const ENDPOINTS = {
  collecting: { name: 'collecting', method: 'POST', url: '/v1/delivery/collecting', key: 'carrier', shape: 'A' },
  cte: { name: 'cte', method: 'PUT', url: '/v1/delivery/cte', key: 'carrier', shape: 'A' },
  label: { name: 'label', method: 'POST', url: '/v1/delivery/mail-label', key: 'carrier', shape: 'A' },
  webhook: { name: 'webhook', method: 'PATCH', url: '/v1/carrier/webhook/:webhook_id', key: 'carrier', shape: 'A' },
  orderEvents: {
    name: 'order-events',
    method: 'GET',
    url: '/seller-group/v1/seller/identifier/:seller_identifier/orders/external_id/:external_id/events',
    key: 'seller-group',
    shape: 'C',
  },
  orderGet: { name: 'order-get', method: 'GET', url: '/seller-group/v1/orders/:order_id', key: 'seller-group', shape: 'C' },
  orderUpdate: { name: 'order-update', method: 'PUT', url: '/seller-group/v1/orders/:order_id', key: 'seller-group', shape: 'B' },
  quotation: { name: 'quotation', method: 'POST', url: '/v1/quotation/orders', key: 'seller-group', shape: 'D' },
} as const satisfies Record<string, EndpointSpec>;

export const CONTROL_PREFIX = '/_sandbox';

const byRoute = new Map<string, EndpointSpec>(Object.values(ENDPOINTS).map((spec) => [`${spec.method} ${spec.url}`, spec]));

/** The API endpoint a routed request belongs to; undefined for control routes and unknown paths. */
export function endpointOf(request: FastifyRequest): EndpointSpec | undefined {
  const url = request.routeOptions.url;
  return url === undefined ? undefined : byRoute.get(`${request.method} ${url}`);
}

export function isControlRequest(request: FastifyRequest): boolean {
  const url = request.routeOptions.url;
  return url !== undefined && (url === CONTROL_PREFIX || url.startsWith(`${CONTROL_PREFIX}/`));
}

/** Header that carries the key of each kind (§5). */
export const KEY_HEADER: Readonly<Record<KeyKind, string>> = {
  carrier: 'x-service-carrier-key',
  'seller-group': 'x-service-seller-group-key',
};
