import type { FastifyInstance } from 'fastify';
import { ENDPOINTS } from '../endpoints.js';
import { fail } from '../error-bodies.js';
import { objectBody, type Body, type RouteContext } from './context.js';

/**
 * PATCH /v1/carrier/webhook/{webhook_id} (§4.4). The body is the whole registration: url
 * (required, http or https), headers (object of strings) and events (array of strings); a field
 * left out becomes null. Other fields are ignored. The webhook must be the caller's.
 */
export function registerWebhook(app: FastifyInstance, ctx: RouteContext): void {
  const { method, url } = ENDPOINTS.webhook;
  app.route<{ Params: { webhook_id: string } }>({
    method,
    url,
    handler: async (request, reply) => {
      const body = objectBody(request.body);
      if (body === null) return fail(reply, 'A', 400, 'INVALID_PARAMS', 'the body must be a JSON object');
      const record = readRegistration(body);
      if ('field' in record) return fail(reply, 'A', 400, 'INVALID_PARAMS', record.message, { field: record.field });
      const webhookId = request.params.webhook_id;
      const webhook = ctx.state.webhooks.get(webhookId);
      if (webhook === undefined || webhook.carrier_id !== ctx.pipeline.callerId(request)) {
        return fail(reply, 'A', 404, 'WEBHOOK_NOT_FOUND', 'Webhook not found', { webhook_id: webhookId });
      }
      webhook.url = record.url;
      webhook.headers = record.headers;
      webhook.events = record.events;
      return {};
    },
  });
}

type Registration = { url: string; headers: Record<string, string> | null; events: string[] | null };

function readRegistration(body: Body): Registration | { field: string; message: string } {
  const { url, headers, events } = body;
  if (typeof url !== 'string' || !isHttpUrl(url)) return { field: 'url', message: 'url is required and must be an http(s) URL' };
  const headerRecord = orNull(headers, isStringRecord);
  if (headerRecord === undefined) return { field: 'headers', message: 'headers must be an object of string values, or null' };
  const eventList = orNull(events, isStringArray);
  if (eventList === undefined) return { field: 'events', message: 'events must be an array of strings, or null' };
  return { url, headers: headerRecord, events: eventList };
}

/** null for a field left out or null, the value when it has the right type, undefined otherwise. */
function orNull<T>(value: unknown, isRight: (value: unknown) => value is T): T | null | undefined {
  if (value === undefined || value === null) return null;
  return isRight(value) ? value : undefined;
}

function isHttpUrl(text: string): boolean {
  try {
    const parsed = new URL(text);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
