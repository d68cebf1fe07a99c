/**
 * `POST /events`: collecting events as JSON, one object or an array. Records take the same path
 * as the lines of an events file: checkEventRecord → collectingJobOf → enqueueEvents, where the
 * event_at dedup happens. Every record gets a verdict by its index; the request as a whole is
 * answered 202 once the valid ones are in Redis.
 *
 * Each record claims its instant under the source id `http:<request id>:<index>`. The request id
 * is a fresh UUID, or the client's `Idempotency-Key`: a client that retries a request which failed
 * half-way (claims taken, jobs not yet added) with the same key gets its own claims back and its
 * jobs added, instead of seeing its own events reported as duplicates and lost.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../log.js';
import { enqueueEvents, type EnqueueDeps } from '../queue/enqueue.js';
import { collectingJobOf, type CollectingJob } from '../store/payloads.js';
import { checkEventRecord } from '../validate/event-record.js';
import { isBearerAccepted, secretNow, type SecretSource } from './secrets.js';

export interface IngestOptions {
  ingestToken: SecretSource | null;
  maxIngestBytes: number;
  enqueueDeps: EnqueueDeps;
  isDraining: () => boolean;
  logger: Logger;
}

export type IngestStatus = 'queued' | 'duplicate' | 'invalid';

export interface IngestVerdict {
  index: number;
  status: IngestStatus;
  code?: string;
  message?: string;
}

export interface IngestAnswer {
  accepted: number;
  duplicates: number;
  invalid: number;
  results: IngestVerdict[];
}

const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** Checks and queues records; the answer lists one verdict per record, in input order. */
export async function ingestRecords(deps: EnqueueDeps, records: readonly unknown[], requestId: string, receivedAt: string): Promise<IngestAnswer> {
  const results: IngestVerdict[] = [];
  const jobs: CollectingJob[] = [];
  const indexOfJob: number[] = [];
  records.forEach((raw, index) => {
    const verdict = checkEventRecord(raw);
    if (!verdict.ok) {
      results[index] = { index, status: 'invalid', code: verdict.error.code, message: verdict.error.message };
      return;
    }
    jobs.push(collectingJobOf(verdict.value, `http:${requestId}:${index}`, { source: 'http', index }, receivedAt));
    indexOfJob.push(index);
    results[index] = { index, status: 'queued' };
  });
  const { duplicates } = jobs.length === 0 ? { duplicates: [] } : await enqueueEvents(deps, jobs);
  for (const duplicate of duplicates) {
    const index = indexOfJob[duplicate.index] ?? duplicate.index;
    results[index] = { index, status: 'duplicate', message: `event_at ${duplicate.eventAt} was already received for delivery ${duplicate.deliveryId}` };
  }
  const count = (status: IngestStatus): number => results.filter((result) => result.status === status).length;
  await deps.stats.add('received', 'collecting', count('invalid'));
  await deps.stats.add('failed', 'collecting', count('invalid'));
  return { accepted: count('queued'), duplicates: count('duplicate'), invalid: count('invalid'), results };
}

export function registerIngest(app: FastifyInstance, options: IngestOptions): void {
  const { ingestToken, enqueueDeps, logger } = options;
  // Runs before the body is read: an unauthorised or unwelcome client does not get to upload it.
  // Fastify stops the request at a hook that returns the reply it has sent.
  const gate = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (ingestToken !== null && !isBearerAccepted(request.headers.authorization, secretNow(ingestToken))) {
      logger.warn({ ip: request.ip, hasAuthorization: request.headers.authorization !== undefined }, 'events refused: missing or wrong bearer token');
      return reply.code(401).header('www-authenticate', 'Bearer realm="carrier-sync"').send({ message: 'missing or wrong bearer token' });
    }
    if (options.isDraining()) {
      return reply.code(503).header('retry-after', '5').send({ message: 'shutting down: send the events to another instance or retry later' });
    }
    return undefined;
  };
  app.post('/events', { bodyLimit: options.maxIngestBytes, onRequest: gate }, async (request, reply) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null) {
      return reply.code(400).send({ message: 'the body must be one JSON object or an array of them' });
    }
    const idempotencyKey = request.headers['idempotency-key'];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey))) {
      return reply.code(400).send({ message: 'Idempotency-Key must be 1-128 characters of A-Z, a-z, 0-9, "_" and "-"' });
    }
    const requestId = idempotencyKey ?? randomUUID();
    const records: readonly unknown[] = Array.isArray(body) ? body : [body];
    const receivedAt = new Date(enqueueDeps.clock.now()).toISOString();
    let answer: IngestAnswer;
    try {
      answer = await ingestRecords(enqueueDeps, records, requestId, receivedAt);
    } catch (error) {
      logger.error({ requestId, records: records.length, err: error }, 'events not queued: redis failed');
      return reply
        .code(503)
        .header('retry-after', '5')
        .send({ message: 'cannot queue the events now (redis): retry the request; records already queued will come back as duplicates' });
    }
    logger.info({ requestId, records: records.length, accepted: answer.accepted, duplicates: answer.duplicates, invalid: answer.invalid }, 'events ingested');
    return reply.code(202).send(answer);
  });
}

/** The 413 answer's message: says the limit, so a client can split its batch. */
export function tooLargeMessage(maxIngestBytes: number): string {
  return `the body is larger than ${maxIngestBytes} bytes: send fewer events per request`;
}
