import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CONTROL_PREFIX } from './endpoints.js';
import { faultsHttpPatchSchema, fromHttpPatch, type SandboxFaults } from './faults.js';
import type { RequestLog } from './request-log.js';
import type { DeliveryInput, SandboxDelivery, SandboxState } from './state.js';

/**
 * HTTP control of a sandbox for tests that run the daemon as a separate process. These routes
 * need no key, are not rate limited, get no faults and are not written to the request log.
 *   GET    /_sandbox/requests?since=<seq>   log entries with seq > since (JSON array)
 *   DELETE /_sandbox/requests               empties the log (seq keeps counting)
 *   GET    /_sandbox/faults                 current faults
 *   PATCH  /_sandbox/faults                 partial faults (+ rateLimitStormForMs, unauthorizedForMs)
 *   POST   /_sandbox/deliveries             one delivery object or an array; 201 with what was created
 *   GET    /_sandbox/deliveries/:id         the delivery's state record
 *   PATCH  /_sandbox/deliveries/:id         { status_name, sub_status? } without recording an event
 */

export interface ControlDeps {
  state: SandboxState;
  log: RequestLog;
  faults: () => SandboxFaults;
  setFaults: (patch: Partial<SandboxFaults>) => void;
  now: () => number;
}

const sinceSchema = z.object({ since: z.coerce.number().int().nonnegative().default(0) });
const statusSchema = z.strictObject({ status_name: z.string().min(1), sub_status: z.string().nullable().optional() });

export function registerControl(app: FastifyInstance, deps: ControlDeps): void {
  const base = CONTROL_PREFIX;

  app.get(`${base}/requests`, async (request, reply) => {
    const query = sinceSchema.safeParse(request.query);
    if (!query.success) return reply.code(400).send({ message: 'since must be a non-negative integer' });
    return deps.log.list(query.data.since);
  });

  app.delete(`${base}/requests`, async (_request, reply) => {
    deps.log.clear();
    return reply.code(204).send();
  });

  app.get(`${base}/faults`, async () => deps.faults());

  app.patch(`${base}/faults`, async (request, reply) => {
    const body = faultsHttpPatchSchema.safeParse(request.body ?? {});
    if (!body.success) return reply.code(400).send({ message: z.prettifyError(body.error) });
    deps.setFaults(fromHttpPatch(body.data, deps.now()));
    return deps.faults();
  });

  app.post(`${base}/deliveries`, async (request, reply) => {
    const inputs = Array.isArray(request.body) ? (request.body as unknown[]) : [request.body ?? {}];
    const ids = inputs.map((input) => (input as { id?: unknown } | null)?.id).filter((id) => typeof id === 'string');
    const taken = ids.find((id, index) => deps.state.deliveries.has(id) || ids.indexOf(id) !== index);
    if (taken !== undefined) return reply.code(409).send({ message: `delivery ${taken} already exists` });
    const created: SandboxDelivery[] = [];
    try {
      for (const input of inputs) created.push(deps.state.addDelivery(input as DeliveryInput));
    } catch (error) {
      for (const delivery of created) deps.state.deliveries.delete(delivery.id);
      return reply.code(400).send({ message: (error as Error).message });
    }
    return reply.code(201).send(Array.isArray(request.body) ? created : created[0]);
  });

  app.get<{ Params: { id: string } }>(`${base}/deliveries/:id`, async (request, reply) => {
    const delivery = deps.state.deliveries.get(request.params.id);
    return delivery ?? reply.code(404).send({ message: `no delivery ${request.params.id}` });
  });

  app.patch<{ Params: { id: string } }>(`${base}/deliveries/:id`, async (request, reply) => {
    const body = statusSchema.safeParse(request.body);
    if (!body.success) return reply.code(400).send({ message: z.prettifyError(body.error) });
    if (!deps.state.deliveries.has(request.params.id)) return reply.code(404).send({ message: `no delivery ${request.params.id}` });
    return deps.state.setDeliveryStatus(request.params.id, body.data.status_name, body.data.sub_status);
  });
}
