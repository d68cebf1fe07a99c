import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ENDPOINTS } from '../endpoints.js';
import { fail } from '../error-bodies.js';
import { parseInstant } from '../event-time.js';
import { quoteMethod } from '../quote-rules.js';
import type { SandboxState } from '../state.js';
import type { RouteContext } from './context.js';

/**
 * POST /v1/quotation/orders (§4.8, legacy). Errors use shape D. Checks: body (400 INVALID_PARAMS)
 * → every destination zip is 8 digits (400 INVALID_DESTINATION_ZIPCODE) → the seller is in the
 * caller's group (404 SELLER_NOT_FOUND). Each order lists the methods that have an expected date;
 * only those with a price too are eligible: per order, the earliest is tagged fastest and the
 * lowest priced cheapest (ties: price/date, then seed order), and the global options sum them.
 */

const int = z.number().int().nonnegative();
const bodySchema = z.object({
  seller_identifier: z.string().min(1),
  orders: z
    .array(
      z.object({
        identifier: z.string().min(1),
        amount: int,
        destination_zip_code: z.string(),
        volumes: z.array(z.object({ weight: int, height: int, length: int, width: int })),
      }),
    )
    .min(1),
});
type OrderEntry = z.infer<typeof bodySchema>['orders'][number];

interface MethodQuotation {
  carrier_name: string;
  logistic_id: string;
  method_id: string;
  method_type: string;
  method_expected_delivery_date: string;
  method_shipping_price: number | null;
  tags_object: { fastest: boolean; cheapest: boolean };
  tags: string[];
}

export function registerQuotation(app: FastifyInstance, ctx: RouteContext): void {
  const { method, url } = ENDPOINTS.quotation;
  app.route({
    method,
    url,
    handler: async (request, reply) => {
      const parsed = bodySchema.safeParse(request.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const field = issue?.path.join('.') ?? '';
        return fail(reply, 'D', 400, 'INVALID_PARAMS', `${field || 'body'}: ${issue?.message ?? 'invalid'}`, { field });
      }
      const body = parsed.data;
      const badZip = body.orders.find((order) => !/^\d{8}$/.test(order.destination_zip_code));
      if (badZip !== undefined) {
        const params = { destination_zipcode: badZip.destination_zip_code };
        return fail(reply, 'D', 400, 'INVALID_DESTINATION_ZIPCODE', 'Invalid destination zip code', params);
      }
      const group = ctx.state.sellerGroups.get(ctx.pipeline.callerId(request));
      const seller = group?.sellers.find((candidate) => (candidate.identifier ?? candidate.document_number) === body.seller_identifier);
      if (seller === undefined) {
        return fail(reply, 'D', 404, 'SELLER_NOT_FOUND', 'Seller not found', { seller_identifier: body.seller_identifier });
      }
      const now = ctx.now();
      const quoted = body.orders.map((order) => ({ order, quotations: quoteOrder(ctx.state, seller.origin_zip_code, order, now) }));
      return {
        seller_identifier: body.seller_identifier,
        origin_address_zipcode: seller.origin_zip_code,
        optimized_global_quotation: { fastest: globalOption(quoted, 'fastest'), cheapest: globalOption(quoted, 'cheapest') },
        orders: quoted.map(({ order, quotations }) => ({
          identifier: order.identifier,
          destination_zip_code: order.destination_zip_code,
          volumes: order.volumes,
          quotations,
        })),
      };
    },
  });
}

function quoteOrder(state: SandboxState, originZip: string, order: OrderEntry, now: number): MethodQuotation[] {
  const totalWeight = order.volumes.reduce((sum, volume) => sum + volume.weight, 0);
  const quotations: MethodQuotation[] = [];
  for (const carrier of state.carriers.values()) {
    for (const method of carrier.methods) {
      const quote = quoteMethod(method.quote, { originZip, destinationZip: order.destination_zip_code, totalWeight }, now);
      if (quote.date === null) continue;
      quotations.push({
        carrier_name: carrier.name,
        logistic_id: carrier.logistic_id,
        method_id: method.id,
        method_type: method.method_type,
        method_expected_delivery_date: quote.date,
        method_shipping_price: quote.price,
        tags_object: { fastest: false, cheapest: false },
        tags: [],
      });
    }
  }
  const eligible = quotations.filter((quotation) => quotation.method_shipping_price !== null);
  const fastest = [...eligible].sort((a, b) => byDate(a, b) || byPrice(a, b))[0];
  const cheapest = [...eligible].sort((a, b) => byPrice(a, b) || byDate(a, b))[0];
  for (const quotation of quotations) {
    quotation.tags_object = { fastest: quotation === fastest, cheapest: quotation === cheapest };
    quotation.tags = [...(quotation === fastest ? ['fastest'] : []), ...(quotation === cheapest ? ['cheapest'] : [])];
  }
  return quotations;
}

function globalOption(quoted: Array<{ order: OrderEntry; quotations: MethodQuotation[] }>, tag: 'fastest' | 'cheapest') {
  const picks = quoted.flatMap(({ order, quotations }) => {
    const pick = quotations.find((quotation) => quotation.tags_object[tag]);
    return pick === undefined ? [] : [{ ...order, ...pick }];
  });
  const latest = [...picks].sort((a, b) => byDate(b, a))[0];
  return {
    total_orders_shipping_price: picks.reduce((sum, pick) => sum + (pick.method_shipping_price ?? 0), 0),
    max_orders_expected_delivery_date: latest?.method_expected_delivery_date ?? null,
    orders_quotations: picks,
  };
}

function byDate(a: MethodQuotation, b: MethodQuotation): number {
  const x = parseInstant(a.method_expected_delivery_date) ?? 0n;
  const y = parseInstant(b.method_expected_delivery_date) ?? 0n;
  return x < y ? -1 : x > y ? 1 : 0;
}

function byPrice(a: MethodQuotation, b: MethodQuotation): number {
  return (a.method_shipping_price ?? 0) - (b.method_shipping_price ?? 0);
}
