import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { instantKey } from './event-time.js';
import {
  deliverySchema,
  type DeliveryData,
  type DeliveryInput,
  type EventData,
  type SeedCarrier,
  type SeedData,
  type SeedMethod,
  type SeedOrder,
  type SeedSeller,
  type SeedSellerGroup,
  type SeedWebhook,
} from './seed-schema.js';

/**
 * The sandbox's in-memory data, seeded at start and changed only by API calls and the helpers
 * below. Tests read it directly; field names follow the API.
 */

export interface LabelRecord {
  sha256: string;
  size_bytes: number;
  external_id: string | null;
  /** 0 for the first label; +1 each time a later one replaced it. */
  replacements: number;
  received_at: string;
}

export interface CteRecord {
  xml: string;
  sha256: string;
  replacements: number;
  received_at: string;
}

export type SandboxEvent = Omit<EventData, 'id' | 'created_at'> & { id: string; created_at: string };

type Filled = 'id' | 'carrier_id' | 'method_id' | 'sub_status' | 'created_at' | 'expected_delivery_date' | 'collect_eta' | 'delivery_eta' | 'events';
export type SandboxDelivery = Omit<DeliveryData, Filled> & {
  id: string;
  carrier_id: string;
  method_id: string;
  sub_status: string | null;
  created_at: string;
  expected_delivery_date: string;
  collect_eta: string;
  delivery_eta: string;
  events: SandboxEvent[];
  label: LabelRecord | null;
  cte: CteRecord | null;
};
export type SandboxOrder = SeedOrder;
export type SandboxWebhook = SeedWebhook;
export type { DeliveryInput };

/** The sub_status that goes with a status when none is given (section 3 of the contract). */
export const DEFAULT_SUB_STATUS: Readonly<Record<string, string>> = {
  PENDING: 'WAITING_FOR_CARRIER',
  DISPATCHED: 'CARRIER_CONFIRMED',
  'In Transit': 'Collecting',
  ORDER_FAILED: 'CARRIER_ERROR',
  SUCCESSFUL: 'DELIVERED',
};

export class SandboxState {
  readonly carriers: ReadonlyMap<string, SeedCarrier>;
  readonly sellerGroups: ReadonlyMap<string, SeedSellerGroup>;
  readonly orders = new Map<string, SandboxOrder>();
  readonly deliveries = new Map<string, SandboxDelivery>();
  readonly webhooks = new Map<string, SandboxWebhook>();
  readonly #now: () => number;
  /** Per delivery: instant keys of its events, rebuilt when the events array changed length. */
  readonly #instants = new Map<string, { count: number; keys: Set<string> }>();

  constructor(seed: SeedData, now: () => number = Date.now) {
    this.#now = now;
    this.carriers = new Map(seed.carriers.map((carrier) => [carrier.id, carrier]));
    this.sellerGroups = new Map(seed.seller_groups.map((group) => [group.id, group]));
    for (const order of seed.orders) this.orders.set(order.id, structuredClone(order));
    for (const webhook of seed.webhooks) this.webhooks.set(webhook.webhook_id, structuredClone(webhook));
    for (const delivery of seed.deliveries) this.#insert(structuredClone(delivery));
  }

  /** Creates a delivery; unset fields get defaults (first carrier and its first method, PENDING, no events). */
  addDelivery(input: DeliveryInput = {}): SandboxDelivery {
    const parsed = deliverySchema.safeParse(input);
    if (!parsed.success) throw new Error(`invalid delivery: ${z.prettifyError(parsed.error)}`);
    return this.#insert(parsed.data);
  }

  /** Moves a delivery to a status without recording an event; sub_status defaults as in section 3. */
  setDeliveryStatus(id: string, status: string, subStatus?: string | null): SandboxDelivery {
    const delivery = this.deliveries.get(id);
    if (delivery === undefined) throw new Error(`no delivery ${id}`);
    delivery.status_name = status;
    delivery.sub_status = subStatus === undefined ? (DEFAULT_SUB_STATUS[status] ?? null) : subStatus;
    return delivery;
  }

  /** Whether an event of the delivery already has this instant (see event-time.ts). */
  hasEventAt(delivery: SandboxDelivery, key: string): boolean {
    let cached = this.#instants.get(delivery.id);
    if (cached === undefined || cached.count !== delivery.events.length) {
      const keys = new Set(delivery.events.map((event) => instantKey(event.event_at) ?? event.event_at));
      cached = { count: delivery.events.length, keys };
      this.#instants.set(delivery.id, cached);
    }
    return cached.keys.has(key);
  }

  /** Appends an event, keeping the instant index in step. */
  recordEvent(delivery: SandboxDelivery, event: SandboxEvent): void {
    const cached = this.#instants.get(delivery.id);
    delivery.events.push(event);
    if (cached !== undefined && cached.count === delivery.events.length - 1) {
      cached.keys.add(instantKey(event.event_at) ?? event.event_at);
      cached.count = delivery.events.length;
    }
  }

  sellerOf(sellerId: string): { group: SeedSellerGroup; seller: SeedSeller } | undefined {
    for (const group of this.sellerGroups.values()) {
      const seller = group.sellers.find((candidate) => candidate.id === sellerId);
      if (seller !== undefined) return { group, seller };
    }
    return undefined;
  }

  methodOf(delivery: SandboxDelivery): { carrier: SeedCarrier; method: SeedMethod | undefined } {
    const carrier = this.carriers.get(delivery.carrier_id);
    if (carrier === undefined) throw new Error(`delivery ${delivery.id} has unknown carrier ${delivery.carrier_id}`);
    return { carrier, method: carrier.methods.find((method) => method.id === delivery.method_id) };
  }

  deliveriesOfOrder(orderId: string): SandboxDelivery[] {
    return [...this.deliveries.values()].filter((delivery) => delivery.order_id === orderId);
  }

  #insert(data: DeliveryData): SandboxDelivery {
    const id = data.id ?? randomUUID();
    if (this.deliveries.has(id)) throw new Error(`delivery ${id} already exists`);
    const carrier = data.carrier_id === undefined ? this.carriers.values().next().value : this.carriers.get(data.carrier_id);
    if (carrier === undefined) throw new Error(`delivery ${id}: unknown carrier_id ${data.carrier_id ?? ''}`);
    const method = data.method_id === undefined ? carrier.methods[0] : carrier.methods.find((m) => m.id === data.method_id);
    if (method === undefined) throw new Error(`delivery ${id}: method_id ${data.method_id ?? ''} is not a method of carrier ${carrier.id}`);
    if (data.order_id !== null && !this.orders.has(data.order_id)) throw new Error(`delivery ${id}: unknown order_id ${data.order_id}`);
    const now = this.#now();
    const at = (offsetMs: number): string => new Date(now + offsetMs).toISOString();
    const delivery: SandboxDelivery = {
      ...data,
      id,
      carrier_id: carrier.id,
      method_id: method.id,
      sub_status: data.sub_status === undefined ? (DEFAULT_SUB_STATUS[data.status_name] ?? null) : data.sub_status,
      created_at: data.created_at ?? at(0),
      expected_delivery_date: data.expected_delivery_date ?? at(2 * 86_400_000),
      collect_eta: data.collect_eta ?? at(2 * 3_600_000),
      delivery_eta: data.delivery_eta ?? at(86_400_000),
      events: data.events.map((event) => ({ ...event, id: event.id ?? randomUUID(), created_at: event.created_at ?? event.event_at })),
      label: null,
      cte: null,
    };
    this.deliveries.set(id, delivery);
    return delivery;
  }
}
