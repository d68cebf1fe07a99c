/** The API client: the only door from carrier-sync to the Delivery Logistics API. */
export { createApiClient, CARRIER_KEY_HEADER, SELLER_GROUP_KEY_HEADER } from './client.js';
export { fromTransportError, parseRetryAfter, readErrorBody, toSyncError, MAX_KEPT_BODY_BYTES } from './errors.js';
export type { ApiErrorBody, ErrorResponse } from './errors.js';
export type {
  ApiClient,
  ApiClientOptions,
  Delivery,
  DeliveryEvent,
  EndpointName,
  GlobalQuotationOption,
  MethodQuotation,
  Order,
  OrderEventsView,
  OrderSummary,
  QuotationOrderInput,
  QuotationRequest,
  QuotationResponse,
  QuotationVolume,
  QuotationVolumeInput,
  QuotedOrder,
  ResponseSample,
  ResponseSampleStatus,
  WebhookRecord,
} from './types.js';
