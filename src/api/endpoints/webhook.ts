/** 4.4 PATCH /v1/carrier/webhook/{webhook_id}: overwrites the whole registration. */
import { encodePathParam, type HttpResponse } from '../http.js';
import type { EndpointRequest, WebhookRecord } from '../types.js';

/**
 * Every field is always sent, `headers: null` included: the API overwrites the record, so a field
 * left out would be cleared anyway. The contract does not name the subscribed-events field
 * (§2.5, §4.4); we send `events`, a list of event names.
 */
export function buildWebhookRequest(webhookId: string, record: WebhookRecord): EndpointRequest {
  return {
    endpoint: 'webhook',
    method: 'PATCH',
    path: `/v1/carrier/webhook/${encodePathParam(webhookId)}`,
    keys: 'carrier',
    body: { url: record.url, headers: record.headers, events: record.events },
  };
}

/** Both shown responses are an empty object; any 2xx means the record is in place. */
export function readWebhookResponse(_response: HttpResponse): void {}
