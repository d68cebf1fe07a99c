/**
 * Types of the API client. The carrier-side calls (the ones the daemon makes) take and return
 * camelCase; each endpoint converts in one place under `endpoints/`.
 *
 * The seller-side responses (Order, OrderEventsView, QuotationResponse) are typed as the wire
 * shapes of api-contract.md §2 and §4.8, snake_case included: the daemon only passes them through
 * (CLI output, lookups), and a field-by-field copy of ~50 fields would be a second place to get
 * the contract wrong. Their requests are camelCase like everything else.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';

export type EndpointName = 'collecting' | 'cte' | 'label' | 'webhook' | 'order-events' | 'order-get' | 'order-update' | 'quotation';

/**
 * Which keys a request carries. 'carrier-and-seller-group' is for 4.1/4.2, whose header the
 * contract leaves ambiguous (§5); client.ts explains the decision.
 */
export type KeyScope = 'carrier' | 'carrier-and-seller-group' | 'seller-group';

/** What an endpoint builder produces; client.ts turns `keys` into headers. */
export interface EndpointRequest {
  endpoint: EndpointName;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Path below the base URL, path parameters already encoded. */
  path: string;
  keys: KeyScope;
  /** Sent as JSON when present. */
  body?: unknown;
}

export type ResponseSampleStatus = number | 'network' | 'timeout';

export interface ResponseSample {
  endpoint: EndpointName;
  status: ResponseSampleStatus;
  durationMs: number;
}

export interface ApiClientOptions {
  baseUrl: string;
  /** The key, or how to read it now (a `*_FILE` secret read again when its file changes: config/secret-file.ts). */
  carrierKey: string | KeySource;
  sellerGroupKey?: string | KeySource | null;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  connections: number;
  logger?: Logger;
  /** Called once per request, whatever its outcome; for metrics. */
  onResponse?: (sample: ResponseSample) => void;
  /** Wall clock for Retry-After HTTP-dates; defaults to the system clock. */
  clock?: Clock;
}

export interface WebhookRecord {
  url: string;
  headers: Record<string, string> | null;
  events: string[];
}

export interface QuotationVolumeInput {
  weight: number;
  height: number;
  length: number;
  width: number;
}

export interface QuotationOrderInput {
  identifier: string;
  amount: number;
  destinationZipCode: string;
  volumes: QuotationVolumeInput[];
}

export interface QuotationRequest {
  sellerIdentifier: string;
  orders: QuotationOrderInput[];
}

/** A key that may change while the process runs. */
export interface KeySource {
  current(): string;
  /** Reads it again now (before a 401 probe). */
  refresh(): string;
}

export interface ApiClient {
  /** `isProcessed: false` is the API's answer to a repeated event_at (200 {success:false}). */
  sendCollecting(input: { deliveryId: string; eventAt: string }): Promise<{ isProcessed: boolean }>;
  putCte(input: { deliveryId: string; xml: string }): Promise<void>;
  sendLabel(input: { deliveryId: string; pdfBase64: string; externalId?: string | null }): Promise<void>;
  /** Sends the whole record: the API overwrites the registration. */
  patchWebhook(webhookId: string, record: WebhookRecord): Promise<void>;
  getOrderEvents(sellerIdentifier: string, externalId: string): Promise<OrderEventsView[]>;
  getOrder(orderId: string): Promise<Order>;
  updateOrder(orderId: string, input: { invoiceNumber?: string; accessKey?: string }): Promise<{ success: boolean }>;
  quoteOrders(input: QuotationRequest): Promise<QuotationResponse>;
  /** Reads the keys again now (a `*_FILE` secret): the next request goes with what the files hold. */
  refreshKeys?(): void;
  /** Waits for in-flight requests, then releases the sockets. Safe to call twice. */
  close(): Promise<void>;
}

// ---- Wire shapes (snake_case), api-contract.md §2. Nullable fields carry null when empty. ----

type Nullable = string | null;

/** The driver fields a delivery and each of its events carry. */
export interface DriverFields {
  driver_name: Nullable;
  driver_document: Nullable;
  driver_phone: Nullable;
  driver_vehicle_type: Nullable;
  driver_vehicle_color: Nullable;
  driver_vehicle_plate: Nullable;
  driver_image_url: Nullable;
}

export interface DeliveryEvent extends DriverFields {
  id: string;
  status: string;
  sub_status: Nullable;
  failure_code: Nullable;
  failure_message: Nullable;
  failure_driver_message: Nullable;
  observation: Nullable;
  latitude: number | null;
  longitude: number | null;
  manual_event: boolean;
  event_at: string;
  created_at: string;
}

export interface Delivery extends DriverFields {
  id: string;
  external_id: Nullable;
  support_id: Nullable;
  type: string;
  method_name: string;
  shipping_method_type: string;
  status_name: string;
  sub_status: Nullable;
  expected_delivery_date: string;
  expected_delivery_price: number;
  created_at: string;
  collect_eta: string;
  collect_verification_code?: string;
  delivery_eta: string;
  delivery_verification_code?: string;
  return_eta?: string;
  return_verification_code?: string;
  manual_delivery: boolean;
  scheduled_at: Nullable;
  /** Oldest first in the contract's data. */
  events: DeliveryEvent[];
}

/** The order fields shared by the order lookup (2.1) and the events view (2.2). */
export interface OrderSummary {
  id: string;
  order_number: string;
  external_id: string;
  tracking: string;
  status_name: string;
  sub_status: Nullable;
  invoice_number: Nullable;
  access_key: Nullable;
  invoice_created_timestamp: string;
  amount: number;
  type: string;
  created_at: string;
  last_delivery_type: string;
  last_delivery_method_name: string;
  last_delivery_shipping_method_type: string;
}

export interface OrderEventsView extends OrderSummary {
  deliveries: Delivery[];
}

export interface Order extends OrderSummary {
  creation_origin: string;
  last_delivery_external_id: string;
  last_delivery_support_id: string;
  last_delivery_collect_eta: string;
  last_delivery_collect_verification_code: string;
  last_delivery_delivery_eta: string;
  last_delivery_delivery_verification_code: string;
  last_delivery_return_eta: string;
  last_delivery_return_verification_code: string;
  additional_information: unknown;
  carrier_additional_information: unknown;
  estimated_route_distance: number;
  estimated_straight_distance: number;
  expected_customer_shipping_price: number;
  expected_customer_shipping_date: string;
  last_delivery_expected_delivery_price: number;
  last_delivery_expected_delivery_date: string;
  customer_purchase_experience_rating: number;
  customer_delivery_experience_rating: number;
  customer_feedback_comment: string;
  delivery_window_start: string;
  delivery_window_end: string;
  delivery_service_time: number;
  seller: { id: string; company_name: string; trading_name: string; document_number: string; identifier: string };
  customer: { name: string; email: string; phone: string; document_type: string; document_number: string };
  destination_address: {
    zip_code: string;
    street: string;
    street_number: string;
    complement: string;
    neighborhood: string;
    city: string;
    state: string;
    country: string;
    reference: string;
    latitude: number;
    longitude: number;
  };
  volumes: Array<{
    weight: number;
    height: number | null;
    width: number | null;
    length: number | null;
    items: Array<{ name: string; quantity: number; amount: number; weight: number; sku: Nullable }>;
  }>;
}

// ---- Quotation wire shapes, api-contract.md §4.8 ----

export interface QuotationVolume {
  weight: number;
  height: number;
  length: number;
  width: number;
}

export interface MethodQuotation {
  carrier_name: string;
  logistic_id: string;
  method_id: string;
  method_type: string;
  /** May carry a UTC offset. */
  method_expected_delivery_date: string;
  method_shipping_price: number | null;
  tags_object: { fastest: boolean; cheapest: boolean };
  tags: string[];
}

export interface GlobalQuotationOption {
  total_orders_shipping_price: number;
  max_orders_expected_delivery_date: string;
  orders_quotations: Array<MethodQuotation & { identifier: string; amount: number; destination_zip_code: string; volumes: QuotationVolume[] }>;
}

export interface QuotedOrder {
  identifier: string;
  destination_zip_code: string;
  volumes: QuotationVolume[];
  /** May be empty. */
  quotations: MethodQuotation[];
}

export interface QuotationResponse {
  seller_identifier: string;
  origin_address_zipcode: string;
  optimized_global_quotation: { fastest: GlobalQuotationOption; cheapest: GlobalQuotationOption };
  orders: QuotedOrder[];
}
