import { z } from 'zod';
import { parseInstant } from './event-time.js';

/**
 * The shape of config/sandbox-seed.json. Field names follow the API (snake_case); fields the
 * API shows as nullable default to null, and rarely interesting order fields have defaults so
 * a seed stays short. Cross-references (ids pointing at each other) are checked in seed.ts.
 */

export const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const uuid = z.string().regex(UUID_SHAPE, 'must be UUID-shaped');
const instant = z.string().refine((text) => parseInstant(text) !== null, 'must be an ISO 8601 instant with an offset');
const text = z.string().min(1);
const nullableText = z.string().nullable().default(null);
const count = z.number().int().nonnegative();

/** Deterministic freight rule of one shipping method; see docs/sandbox.md. */
export const quoteRuleSchema = z.strictObject({
  base_price: count,
  price_per_kg: count.default(0),
  price_per_zone: count.default(0),
  transit_days: count,
  days_per_zone: count.default(0),
  /** First digits of destination zip codes served; null serves every zip code. */
  serves_zip_prefixes: z
    .array(z.string().regex(/^\d{1,8}$/))
    .nullable()
    .default(null),
  max_weight: count.nullable().default(null),
  has_price: z.boolean().default(true),
  has_date: z.boolean().default(true),
});

const methodSchema = z.strictObject({
  id: uuid,
  name: text,
  method_type: text,
  shipping_method_type: text,
  quote: quoteRuleSchema,
});

const carrierSchema = z.strictObject({
  id: uuid,
  name: text,
  key: z.string().min(8),
  kind: text,
  logistic_id: uuid,
  methods: z.array(methodSchema).min(1),
});

const sellerSchema = z.strictObject({
  id: uuid,
  company_name: text,
  trading_name: text,
  document_number: text,
  /** The branch identifier; defaults to the branch's document number (§4.5). */
  identifier: text.optional(),
  origin_zip_code: z.string().regex(/^\d{8}$/, 'must be 8 digits'),
});

const sellerGroupSchema = z.strictObject({ id: uuid, name: text, key: z.string().min(8), sellers: z.array(sellerSchema).min(1) });

const webhookSchema = z.strictObject({
  webhook_id: text,
  carrier_id: uuid,
  url: text,
  events: z.array(z.string()).nullable().default(null),
  headers: z.record(z.string(), z.string()).nullable().default(null),
});

const volumeSchema = z.strictObject({
  weight: count,
  height: count.nullable().default(null),
  width: count.nullable().default(null),
  length: count.nullable().default(null),
  items: z.array(z.strictObject({ name: text, quantity: count, amount: count, weight: count, sku: nullableText })).default([]),
});

export const orderSchema = z.strictObject({
  id: uuid,
  order_number: text,
  external_id: text,
  seller_id: uuid,
  tracking: text,
  status_name: text.default('CREATED'),
  sub_status: nullableText,
  invoice_number: nullableText,
  access_key: z
    .string()
    .regex(/^\d{44}$/, 'must be 44 digits')
    .nullable()
    .default(null),
  invoice_created_timestamp: instant,
  amount: count,
  type: text.default('DELIVERY'),
  created_at: instant,
  creation_origin: text.default('API'),
  additional_information: z.unknown().default(null),
  carrier_additional_information: z.unknown().default(null),
  estimated_route_distance: count.default(0),
  estimated_straight_distance: count.default(0),
  expected_customer_shipping_price: count.default(0),
  expected_customer_shipping_date: instant,
  customer_purchase_experience_rating: count.default(0),
  customer_delivery_experience_rating: count.default(0),
  customer_feedback_comment: z.string().default(''),
  delivery_window_start: instant,
  delivery_window_end: instant,
  delivery_service_time: count.default(0),
  customer: z.strictObject({
    name: text,
    email: text,
    phone: text,
    document_type: text.default('CPF'),
    document_number: text,
  }),
  destination_address: z.strictObject({
    zip_code: z.string(),
    street: z.string(),
    street_number: z.string(),
    complement: z.string().default(''),
    neighborhood: z.string(),
    city: z.string(),
    state: z.string(),
    country: z.string().default('BR'),
    reference: z.string().default(''),
    latitude: z.number(),
    longitude: z.number(),
  }),
  volumes: z.array(volumeSchema).default([]),
});

export const eventSchema = z.strictObject({
  id: uuid.optional(),
  status: text,
  sub_status: nullableText,
  failure_code: nullableText,
  failure_message: nullableText,
  failure_driver_message: nullableText,
  observation: nullableText,
  driver_name: nullableText,
  driver_document: nullableText,
  driver_phone: nullableText,
  driver_vehicle_type: nullableText,
  driver_vehicle_color: nullableText,
  driver_vehicle_plate: nullableText,
  driver_image_url: nullableText,
  latitude: z.number().nullable().default(null),
  longitude: z.number().nullable().default(null),
  manual_event: z.boolean().default(false),
  event_at: instant,
  created_at: instant.optional(),
});

/** Expected CT-e values of a delivery; a field left out is only checked for presence. */
export const cteExpectSchema = z.strictObject({
  cUF: z.string().optional(),
  nCT: z.string().optional(),
  emit_cnpj: z.string().optional(),
  v_t_prest: z.union([z.string(), z.number()]).optional(),
  dest_document: z.string().optional(),
});

export const deliverySchema = z.strictObject({
  id: uuid.optional(),
  order_id: uuid.nullable().default(null),
  carrier_id: uuid.optional(),
  method_id: uuid.optional(),
  external_id: nullableText,
  support_id: nullableText,
  status_name: text.default('PENDING'),
  sub_status: z.string().nullable().optional(),
  driver_name: nullableText,
  driver_document: nullableText,
  driver_phone: nullableText,
  driver_vehicle_type: nullableText,
  driver_vehicle_color: nullableText,
  driver_vehicle_plate: nullableText,
  driver_image_url: nullableText,
  expected_delivery_date: instant.optional(),
  expected_delivery_price: count.default(0),
  created_at: instant.optional(),
  collect_eta: instant.optional(),
  collect_verification_code: z.string().optional(),
  delivery_eta: instant.optional(),
  delivery_verification_code: z.string().optional(),
  return_eta: instant.optional(),
  return_verification_code: z.string().optional(),
  manual_delivery: z.boolean().default(false),
  scheduled_at: instant.nullable().default(null),
  events: z.array(eventSchema).default([]),
  cte_expect: cteExpectSchema.nullable().default(null),
});

export const seedSchema = z.strictObject({
  carriers: z.array(carrierSchema).min(1),
  seller_groups: z.array(sellerGroupSchema).default([]),
  webhooks: z.array(webhookSchema).default([]),
  orders: z.array(orderSchema).default([]),
  deliveries: z.array(deliverySchema).default([]),
});

export type SandboxSeed = z.input<typeof seedSchema>;
export type SeedData = z.output<typeof seedSchema>;
export type SeedCarrier = z.output<typeof carrierSchema>;
export type SeedMethod = z.output<typeof methodSchema>;
export type QuoteRule = z.output<typeof quoteRuleSchema>;
export type SeedSellerGroup = z.output<typeof sellerGroupSchema>;
export type SeedSeller = z.output<typeof sellerSchema>;
export type SeedOrder = z.output<typeof orderSchema>;
export type SeedWebhook = z.output<typeof webhookSchema>;
export type DeliveryInput = z.input<typeof deliverySchema>;
export type DeliveryData = z.output<typeof deliverySchema>;
export type EventData = z.output<typeof eventSchema>;
export type CteExpect = z.output<typeof cteExpectSchema>;
