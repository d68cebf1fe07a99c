import { z } from 'zod';

/**
 * Faults the sandbox injects into API requests (never into /_sandbox control requests).
 * They are applied in this order, each before any other processing of the request:
 * reset → latency → 503 error → 401 window; the storm is applied at the rate-limit step,
 * after the key was checked.
 */
export interface SandboxFaults {
  /** 0..1: fraction of requests answered 503 `{message}` before any other processing. */
  errorRate: number;
  /** 0..1: fraction of requests whose socket is destroyed without an answer. */
  resetRate: number;
  /** Added delay before answering. */
  latencyMs: number;
  /** Plus a random 0..latencyJitterMs. */
  latencyJitterMs: number;
  /** Epoch ms: until then, every authenticated request gets 429 with Retry-After. */
  rateLimitStormUntil: number | null;
  /** Retry-After (seconds) sent during the storm. */
  stormRetryAfterSec: number;
  /** Epoch ms: until then, every request gets 401 `{message:'Unauthorized'}`. */
  unauthorizedUntil: number | null;
}

export const NO_FAULTS: Readonly<SandboxFaults> = Object.freeze({
  errorRate: 0,
  resetRate: 0,
  latencyMs: 0,
  latencyJitterMs: 0,
  rateLimitStormUntil: null,
  stormRetryAfterSec: 1,
  unauthorizedUntil: null,
});

const rate = z.number().min(0).max(1);
const millis = z.number().int().min(0);
const until = z.number().int().nonnegative().nullable();

export const faultsPatchSchema = z.strictObject({
  errorRate: rate.optional(),
  resetRate: rate.optional(),
  latencyMs: millis.optional(),
  latencyJitterMs: millis.optional(),
  rateLimitStormUntil: until.optional(),
  stormRetryAfterSec: z.number().int().min(0).optional(),
  unauthorizedUntil: until.optional(),
});

/** The HTTP PATCH body also takes durations relative to the sandbox's clock. */
export const faultsHttpPatchSchema = faultsPatchSchema.extend({
  rateLimitStormForMs: millis.optional(),
  unauthorizedForMs: millis.optional(),
});

/** Applies a validated patch; throws an Error naming every bad field. */
export function mergeFaults(current: SandboxFaults, patch: Partial<SandboxFaults>): SandboxFaults {
  const parsed = faultsPatchSchema.safeParse(patch);
  if (!parsed.success) throw new Error(`invalid sandbox faults: ${z.prettifyError(parsed.error)}`);
  const next = { ...current };
  for (const [name, value] of Object.entries(parsed.data)) {
    if (value !== undefined) Object.assign(next, { [name]: value });
  }
  return next;
}

/** Turns the HTTP form (with *ForMs durations) into a plain patch. */
export function fromHttpPatch(body: z.infer<typeof faultsHttpPatchSchema>, now: number): Partial<SandboxFaults> {
  const { rateLimitStormForMs, unauthorizedForMs, ...patch } = body;
  const result: Partial<SandboxFaults> = {};
  for (const [name, value] of Object.entries(patch)) {
    if (value !== undefined) Object.assign(result, { [name]: value });
  }
  if (rateLimitStormForMs !== undefined) result.rateLimitStormUntil = now + rateLimitStormForMs;
  if (unauthorizedForMs !== undefined) result.unauthorizedUntil = now + unauthorizedForMs;
  return result;
}

export function isActiveUntil(until: number | null, now: number): boolean {
  return until !== null && now < until;
}

export function delayOf(faults: SandboxFaults, random: () => number): number {
  return faults.latencyMs + Math.floor(random() * (faults.latencyJitterMs + 1));
}
