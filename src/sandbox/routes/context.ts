import type { FastifyRequest } from 'fastify';
import type { Pipeline } from '../pipeline.js';
import { UUID_SHAPE } from '../seed-schema.js';
import type { SandboxDelivery, SandboxState } from '../state.js';

/** What every route module gets: the data, the authenticated caller, the request log, the clock. */
export interface RouteContext {
  state: SandboxState;
  pipeline: Pipeline;
  /** Create unknown UUID-shaped deliveries on first use, as PENDING for the calling carrier. */
  isAutoCreating: boolean;
  now: () => number;
}

export type Body = Record<string, unknown>;

/** The JSON body as an object, or null when it is missing or not an object. */
export function objectBody(body: unknown): Body | null {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Body) : null;
}

export function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/**
 * The calling carrier's delivery with this id. Another carrier's delivery is treated exactly as an
 * unknown one, so a key never learns which ids exist elsewhere.
 */
export function carrierDelivery(ctx: RouteContext, request: FastifyRequest, deliveryId: string): SandboxDelivery | undefined {
  const carrierId = ctx.pipeline.callerId(request);
  let delivery = ctx.state.deliveries.get(deliveryId);
  if (delivery === undefined && ctx.isAutoCreating && UUID_SHAPE.test(deliveryId)) {
    delivery = ctx.state.addDelivery({ id: deliveryId, carrier_id: carrierId });
  }
  return delivery !== undefined && delivery.carrier_id === carrierId ? delivery : undefined;
}

/** Statuses in which a delivery is cancelled or finished with failure (§3 rule 2). */
export const CANCELLED_OR_FAILED: ReadonlySet<string> = new Set(['CANCELLED', 'ORDER_FAILED']);

/** Statuses after which no driver comes to collect any more. */
export const FINISHED: ReadonlySet<string> = new Set([...CANCELLED_OR_FAILED, 'SUCCESSFUL']);
