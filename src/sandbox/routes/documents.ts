import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { matchCte, readCte } from '../cte-check.js';
import { ENDPOINTS } from '../endpoints.js';
import { fail } from '../error-bodies.js';
import { checkLabel } from '../label-check.js';
import { CANCELLED_OR_FAILED, carrierDelivery, nonEmptyString, objectBody, type RouteContext } from './context.js';

/**
 * The two documents a carrier attaches to a delivery. Both check the document itself first
 * (it is part of the body), then the delivery, and replace any earlier document when accepted.
 *   PUT  /v1/delivery/cte        (§4.2) 400 CTE_VALIDATION_ERROR | 400 DELIVERY_NOT_FOUND | 200 {}
 *   POST /v1/delivery/mail-label (§4.3) 400 UNAUTHORIZED (not a PDF) | 404 DELIVERY_NOT_FOUND |
 *                                       400 DELIVERY_NOT_ELIGIBLE (cancelled/failed) | 200 {}
 */
export function registerDocuments(app: FastifyInstance, ctx: RouteContext): void {
  app.route({
    method: ENDPOINTS.cte.method,
    url: ENDPOINTS.cte.url,
    handler: async (request, reply) => {
      const body = objectBody(request.body);
      if (body === null) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'the body must be a JSON object');
      const deliveryId = body['delivery_id'];
      if (!nonEmptyString(deliveryId)) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'delivery_id is required', { field: 'delivery_id' });
      ctx.pipeline.note(request, { deliveryId });
      const xml = body['xml_cte_string'];
      if (!nonEmptyString(xml)) {
        const params = { delivery_id: deliveryId, field: 'xml_cte_string' };
        return fail(reply, 'A', 400, 'CTE_VALIDATION_ERROR', 'xml_cte_string is required', params);
      }
      const reading = readCte(xml);
      if ('problem' in reading) {
        const { field, message } = reading.problem;
        return fail(reply, 'A', 400, 'CTE_VALIDATION_ERROR', message, { delivery_id: deliveryId, field });
      }
      const delivery = carrierDelivery(ctx, request, deliveryId);
      if (delivery === undefined) return fail(reply, 'A', 400, 'DELIVERY_NOT_FOUND', 'Delivery not found', { delivery_id: deliveryId });
      const mismatch = matchCte(reading.fields, delivery.cte_expect);
      if (mismatch !== null) {
        return fail(reply, 'A', 400, 'CTE_VALIDATION_ERROR', mismatch.message, { delivery_id: deliveryId, field: mismatch.field });
      }
      delivery.cte = {
        xml,
        sha256: sha256(Buffer.from(xml, 'utf8')),
        replacements: delivery.cte === null ? 0 : delivery.cte.replacements + 1,
        received_at: new Date(ctx.now()).toISOString(),
      };
      return {};
    },
  });

  app.route({
    method: ENDPOINTS.label.method,
    url: ENDPOINTS.label.url,
    handler: async (request, reply) => {
      const body = objectBody(request.body);
      if (body === null) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'the body must be a JSON object');
      const { delivery_id: deliveryId, base64, external_id: externalId } = body;
      if (!nonEmptyString(deliveryId)) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'delivery_id is required', { field: 'delivery_id' });
      ctx.pipeline.note(request, { deliveryId });
      if (typeof base64 !== 'string') return fail(reply, 'A', 400, 'INVALID_PARAMS', 'base64 is required', { field: 'base64' });
      if (externalId !== undefined && externalId !== null && typeof externalId !== 'string') {
        return fail(reply, 'A', 400, 'INVALID_PARAMS', 'external_id must be a string', { field: 'external_id' });
      }
      const verdict = checkLabel(base64);
      if (!verdict.isPdf) return fail(reply, 'A', 400, 'UNAUTHORIZED', verdict.reason, { delivery_id: deliveryId });
      const delivery = carrierDelivery(ctx, request, deliveryId);
      if (delivery === undefined) return fail(reply, 'A', 404, 'DELIVERY_NOT_FOUND', 'Delivery not found', { delivery_id: deliveryId });
      if (CANCELLED_OR_FAILED.has(delivery.status_name)) {
        const message = `a label cannot be attached to a delivery in status ${delivery.status_name}`;
        return fail(reply, 'A', 400, 'DELIVERY_NOT_ELIGIBLE', message, { delivery_id: deliveryId, status_name: delivery.status_name });
      }
      const labelSha256 = sha256(verdict.bytes);
      delivery.label = {
        sha256: labelSha256,
        size_bytes: verdict.bytes.length,
        external_id: externalId ?? null,
        replacements: delivery.label === null ? 0 : delivery.label.replacements + 1,
        received_at: new Date(ctx.now()).toISOString(),
      };
      ctx.pipeline.note(request, { labelSha256 });
      return {};
    },
  });
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
