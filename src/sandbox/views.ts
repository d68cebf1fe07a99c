import { parseInstant } from './event-time.js';
import type { SandboxDelivery, SandboxOrder, SandboxState } from './state.js';

/**
 * The records the seller endpoints return, built from state: Order (§2.1), Order events view
 * (§2.2), Delivery (§2.3). An order's last_delivery_* fields come from its most recently created
 * delivery and are null when it has none; events are listed oldest first by event_at.
 */

export function orderView(state: SandboxState, order: SandboxOrder): Record<string, unknown> {
  const last = lastDelivery(state, order);
  const method = last === undefined ? undefined : state.methodOf(last);
  const found = state.sellerOf(order.seller_id);
  return {
    id: order.id,
    order_number: order.order_number,
    external_id: order.external_id,
    tracking: order.tracking,
    status_name: order.status_name,
    sub_status: order.sub_status,
    invoice_number: order.invoice_number,
    access_key: order.access_key,
    invoice_created_timestamp: order.invoice_created_timestamp,
    amount: order.amount,
    type: order.type,
    created_at: order.created_at,
    creation_origin: order.creation_origin,
    last_delivery_type: method?.carrier.kind ?? null,
    last_delivery_method_name: method?.method?.name ?? null,
    last_delivery_shipping_method_type: method?.method?.shipping_method_type ?? null,
    last_delivery_external_id: last?.external_id ?? null,
    last_delivery_support_id: last?.support_id ?? null,
    last_delivery_collect_eta: last?.collect_eta ?? null,
    last_delivery_collect_verification_code: last?.collect_verification_code ?? null,
    last_delivery_delivery_eta: last?.delivery_eta ?? null,
    last_delivery_delivery_verification_code: last?.delivery_verification_code ?? null,
    last_delivery_return_eta: last?.return_eta ?? null,
    last_delivery_return_verification_code: last?.return_verification_code ?? null,
    additional_information: order.additional_information,
    carrier_additional_information: order.carrier_additional_information,
    estimated_route_distance: order.estimated_route_distance,
    estimated_straight_distance: order.estimated_straight_distance,
    expected_customer_shipping_price: order.expected_customer_shipping_price,
    expected_customer_shipping_date: order.expected_customer_shipping_date,
    last_delivery_expected_delivery_price: last?.expected_delivery_price ?? null,
    last_delivery_expected_delivery_date: last?.expected_delivery_date ?? null,
    customer_purchase_experience_rating: order.customer_purchase_experience_rating,
    customer_delivery_experience_rating: order.customer_delivery_experience_rating,
    customer_feedback_comment: order.customer_feedback_comment,
    delivery_window_start: order.delivery_window_start,
    delivery_window_end: order.delivery_window_end,
    delivery_service_time: order.delivery_service_time,
    seller: found === undefined ? null : sellerView(found.seller),
    customer: order.customer,
    destination_address: order.destination_address,
    volumes: order.volumes,
  };
}

export function orderEventsView(state: SandboxState, order: SandboxOrder): Record<string, unknown> {
  const full = orderView(state, order);
  const fields = [
    'id',
    'order_number',
    'external_id',
    'tracking',
    'status_name',
    'sub_status',
    'invoice_number',
    'access_key',
    'invoice_created_timestamp',
    'amount',
    'type',
    'created_at',
    'last_delivery_type',
    'last_delivery_method_name',
    'last_delivery_shipping_method_type',
  ];
  const view: Record<string, unknown> = Object.fromEntries(fields.map((field) => [field, full[field]]));
  view['deliveries'] = byCreation(state.deliveriesOfOrder(order.id)).map((delivery) => deliveryView(state, delivery));
  return view;
}

export function deliveryView(state: SandboxState, delivery: SandboxDelivery): Record<string, unknown> {
  const { carrier, method } = state.methodOf(delivery);
  const optional = (name: keyof SandboxDelivery): Record<string, unknown> => (delivery[name] === undefined ? {} : { [name]: delivery[name] });
  return {
    id: delivery.id,
    external_id: delivery.external_id,
    support_id: delivery.support_id,
    type: carrier.kind,
    method_name: method?.name ?? null,
    shipping_method_type: method?.shipping_method_type ?? null,
    status_name: delivery.status_name,
    sub_status: delivery.sub_status,
    driver_name: delivery.driver_name,
    driver_document: delivery.driver_document,
    driver_phone: delivery.driver_phone,
    driver_vehicle_type: delivery.driver_vehicle_type,
    driver_vehicle_color: delivery.driver_vehicle_color,
    driver_vehicle_plate: delivery.driver_vehicle_plate,
    driver_image_url: delivery.driver_image_url,
    expected_delivery_date: delivery.expected_delivery_date,
    expected_delivery_price: delivery.expected_delivery_price,
    created_at: delivery.created_at,
    collect_eta: delivery.collect_eta,
    ...optional('collect_verification_code'),
    delivery_eta: delivery.delivery_eta,
    ...optional('delivery_verification_code'),
    ...optional('return_eta'),
    ...optional('return_verification_code'),
    manual_delivery: delivery.manual_delivery,
    scheduled_at: delivery.scheduled_at,
    events: [...delivery.events].sort((a, b) => compareInstants(a.event_at, b.event_at)).map((event) => ({ ...event })),
  };
}

function sellerView(seller: { id: string; company_name: string; trading_name: string; document_number: string; identifier?: string | undefined }) {
  const { id, company_name, trading_name, document_number } = seller;
  return { id, company_name, trading_name, document_number, identifier: seller.identifier ?? document_number };
}

function lastDelivery(state: SandboxState, order: SandboxOrder): SandboxDelivery | undefined {
  return byCreation(state.deliveriesOfOrder(order.id)).at(-1);
}

function byCreation(deliveries: SandboxDelivery[]): SandboxDelivery[] {
  return [...deliveries].sort((a, b) => compareInstants(a.created_at, b.created_at));
}

function compareInstants(a: string, b: string): number {
  const x = parseInstant(a) ?? 0n;
  const y = parseInstant(b) ?? 0n;
  return x < y ? -1 : x > y ? 1 : 0;
}
