import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ENDPOINTS } from '../endpoints.js';
import { fail } from '../error-bodies.js';
import { instantKey } from '../event-time.js';
import type { SandboxDelivery, SandboxEvent } from '../state.js';
import { carrierDelivery, FINISHED, nonEmptyString, objectBody, type RouteContext } from './context.js';

/**
 * POST /v1/delivery/collecting (§4.1). Checks, in order: body → event_at is an instant with an
 * offset (400 INVALID_EVENT_AT) → the caller's delivery (404 DELIVERY_NOT_FOUND) → the same instant
 * as any earlier event of the delivery (200 success:false, nothing recorded) → not finished
 * (400 DELIVERY_NOT_ELIGIBLE) → record the event, move to In Transit / Collecting.
 */
export function registerCollecting(app: FastifyInstance, ctx: RouteContext): void {
  const { method, url } = ENDPOINTS.collecting;
  app.route({
    method,
    url,
    handler: async (request, reply) => {
      const body = objectBody(request.body);
      if (body === null) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'the body must be a JSON object');
      const deliveryId = body['delivery_id'];
      if (!nonEmptyString(deliveryId)) {
        return fail(reply, 'A', 400, 'INVALID_PARAMS', 'delivery_id is required', { field: 'delivery_id' });
      }
      const eventAt = body['event_at'];
      ctx.pipeline.note(request, { deliveryId, ...(typeof eventAt === 'string' ? { eventAt } : {}) });
      const key = typeof eventAt === 'string' ? instantKey(eventAt) : null;
      if (typeof eventAt !== 'string' || key === null) {
        const message = 'event_at must be an ISO 8601 date and time with an offset, e.g. 2025-01-31T12:00:00-03:00';
        return fail(reply, 'A', 400, 'INVALID_EVENT_AT', message, { event_at: eventAt ?? null });
      }
      const delivery = carrierDelivery(ctx, request, deliveryId);
      if (delivery === undefined) {
        return fail(reply, 'A', 404, 'DELIVERY_NOT_FOUND', 'Delivery not found', { delivery_id: deliveryId });
      }
      if (ctx.state.hasEventAt(delivery, key)) {
        ctx.pipeline.note(request, { isRepeat: true });
        return { success: false };
      }
      if (FINISHED.has(delivery.status_name)) {
        const message = `a delivery in status ${delivery.status_name} cannot be collected`;
        return fail(reply, 'A', 400, 'DELIVERY_NOT_ELIGIBLE', message, { delivery_id: deliveryId, status_name: delivery.status_name });
      }
      ctx.state.recordEvent(delivery, collectingEvent(delivery, eventAt, ctx.now()));
      delivery.status_name = 'In Transit';
      delivery.sub_status = 'Collecting';
      ctx.pipeline.note(request, { isRepeat: false });
      return { success: true };
    },
  });
}

function collectingEvent(delivery: SandboxDelivery, eventAt: string, now: number): SandboxEvent {
  return {
    id: randomUUID(),
    status: 'In Transit',
    sub_status: 'Collecting',
    failure_code: null,
    failure_message: null,
    failure_driver_message: null,
    observation: null,
    driver_name: delivery.driver_name,
    driver_document: delivery.driver_document,
    driver_phone: delivery.driver_phone,
    driver_vehicle_type: delivery.driver_vehicle_type,
    driver_vehicle_color: delivery.driver_vehicle_color,
    driver_vehicle_plate: delivery.driver_vehicle_plate,
    driver_image_url: delivery.driver_image_url,
    latitude: null,
    longitude: null,
    manual_event: false,
    event_at: eventAt,
    created_at: new Date(now).toISOString(),
  };
}
