import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ENDPOINTS } from '../endpoints.js';
import { fail } from '../error-bodies.js';
import type { SandboxOrder } from '../state.js';
import { orderEventsView, orderView } from '../views.js';
import { objectBody, type RouteContext } from './context.js';

/**
 * The seller-group order endpoints. A key sees only orders of sellers in its own group; any
 * other order is reported exactly like a missing one.
 *   GET /seller-group/v1/seller/identifier/{id}/orders/external_id/{id}/events (§4.5) 404 shape C
 *   GET /seller-group/v1/orders/{order_id} (§4.6) 404 shape C ORDER_NOT_FOUND
 *   PUT /seller-group/v1/orders/{order_id} (§4.7) 400 / 404 shape B, 200 {success:true}
 */
export function registerSeller(app: FastifyInstance, ctx: RouteContext): void {
  const ownOrder = (request: FastifyRequest, orderId: string): SandboxOrder | undefined => {
    const order = ctx.state.orders.get(orderId);
    if (order === undefined) return undefined;
    return ctx.state.sellerOf(order.seller_id)?.group.id === ctx.pipeline.callerId(request) ? order : undefined;
  };

  app.route<{ Params: { seller_identifier: string; external_id: string } }>({
    method: ENDPOINTS.orderEvents.method,
    url: ENDPOINTS.orderEvents.url,
    handler: async (request, reply) => {
      const { seller_identifier: identifier, external_id: externalId } = request.params;
      const group = ctx.state.sellerGroups.get(ctx.pipeline.callerId(request));
      const seller = group?.sellers.find((candidate) => (candidate.identifier ?? candidate.document_number) === identifier);
      if (seller === undefined) return fail(reply, 'C', 404, 'SELLER_NOT_FOUND', `Seller ${identifier} not found`);
      const orders = [...ctx.state.orders.values()].filter((order) => order.seller_id === seller.id && order.external_id === externalId);
      if (orders.length === 0) return fail(reply, 'C', 404, 'ORDER_NOT_FOUND', `Order with external_id ${externalId} not found`);
      return orders.map((order) => orderEventsView(ctx.state, order));
    },
  });

  app.route<{ Params: { order_id: string } }>({
    method: ENDPOINTS.orderGet.method,
    url: ENDPOINTS.orderGet.url,
    handler: async (request, reply) => {
      const order = ownOrder(request, request.params.order_id);
      if (order === undefined) return fail(reply, 'C', 404, 'ORDER_NOT_FOUND', 'Order not found');
      return orderView(ctx.state, order);
    },
  });

  app.route<{ Params: { order_id: string } }>({
    method: ENDPOINTS.orderUpdate.method,
    url: ENDPOINTS.orderUpdate.url,
    handler: async (request, reply) => {
      const body = objectBody(request.body);
      if (body === null) return fail(reply, 'B', 400, 'INVALID_PARAMS', 'the body must be a JSON object');
      const { invoice_number: invoiceNumber, access_key: accessKey } = body;
      if (invoiceNumber === undefined && accessKey === undefined) {
        return fail(reply, 'B', 400, 'INVALID_PARAMS', 'send invoice_number, access_key or both');
      }
      if (invoiceNumber !== undefined && (typeof invoiceNumber !== 'string' || invoiceNumber.trim() === '')) {
        return fail(reply, 'B', 400, 'INVALID_PARAMS', 'invoice_number must be a non-empty string');
      }
      if (accessKey !== undefined && typeof accessKey !== 'string') return fail(reply, 'B', 400, 'INVALID_PARAMS', 'access_key must be a string');
      if (typeof accessKey === 'string' && !/^\d{44}$/.test(accessKey)) {
        return fail(reply, 'B', 400, 'INVALID_ACCESS_KEY', 'access_key must be 44 digits');
      }
      const order = ownOrder(request, request.params.order_id);
      if (order === undefined) {
        const message = 'Invoice not found or the order is not in your seller group';
        return fail(reply, 'B', 404, 'INVOICE_NOT_FOUND_OR_NOT_IN_SELLER_GROUP', message);
      }
      if (typeof invoiceNumber === 'string') order.invoice_number = invoiceNumber;
      if (typeof accessKey === 'string') order.access_key = accessKey;
      return { success: true };
    },
  });
}
