/**
 * Requests made with the key outside the item queues — a webhook PATCH here — take a slot of the
 * key's shared limiter like every item does, so the limit holds across every endpoint, and a 429
 * they get pauses every process as an item's does. Real Redis, real sandbox over HTTP.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.js';
import { createKeys } from '../../src/store/keys.js';
import { rateLimiterFor } from '../../src/gate/limiter.js';
import { applyWebhook } from '../../src/runtime/roles/webhook.js';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/server.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const WEBHOOK = 'fb000000-0000-4000-8000-000000000001';
const prefix = uniquePrefix('oneoff');
let redis: Redis | undefined;
let sandbox: SandboxHandle | undefined;
afterAll(async () => {
  await sandbox?.close();
  await cleanupPrefix(prefix);
  redis?.disconnect();
});

describe('one-off requests with the key', () => {
  it('a webhook PATCH takes a slot, and is not sent while the window is full', async () => {
    sandbox = await startSandbox({ port: 0 });
    redis = new Redis(testRedisUrl());
    const carrierKey = Object.values(sandbox.keys.carriers)[0] ?? '';
    const client = createApiClient({ baseUrl: sandbox.url, carrierKey, connectTimeoutMs: 2000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, connections: 1 });
    const ctx = { redis, keys: createKeys(prefix), config: { delivery: { ratePerMinute: 2, rateWindowMarginMs: 0 } } };
    const limiter = rateLimiterFor(ctx, carrierKey);
    const patches = (): number => sandbox!.requests().filter((r) => r.endpoint === 'webhook').length;
    try {
      const record = { url: 'https://example.test/hook', headers: null, events: [] };
      await applyWebhook(ctx, { client, limiter }, WEBHOOK, record);
      await applyWebhook(ctx, { client, limiter }, WEBHOOK, record);
      expect(patches()).toBe(2);
      expect(await limiter.inWindow()).toBe(2);

      // The window is full for about a minute, longer than a PATCH waits: refused at once, not sent.
      await expect(applyWebhook(ctx, { client, limiter }, WEBHOOK, record)).rejects.toMatchObject({ code: 'API_RATE_LIMITED' });
      expect(patches()).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('a 429 to a webhook PATCH holds every process back for its Retry-After', async () => {
    sandbox ??= await startSandbox({ port: 0 });
    redis ??= new Redis(testRedisUrl());
    const carrierKey = Object.values(sandbox.keys.carriers)[0] ?? '';
    const client = createApiClient({ baseUrl: sandbox.url, carrierKey, connectTimeoutMs: 2000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, connections: 1 });
    const ctx = { redis, keys: createKeys(`${prefix}:storm`), config: { delivery: { ratePerMinute: 100, rateWindowMarginMs: 0 } } };
    const limiter = rateLimiterFor(ctx, carrierKey);
    try {
      sandbox.setFaults({ rateLimitStormUntil: Date.now() + 60_000, stormRetryAfterSec: 30 });
      await expect(applyWebhook(ctx, { client, limiter }, WEBHOOK, { url: 'https://example.test/hook', headers: null, events: [] })).rejects.toMatchObject({
        code: 'API_RATE_LIMITED',
      });
      expect(await limiter.pausedForMs()).toBeGreaterThan(20_000);
      expect(await limiter.tryAcquire()).toBeGreaterThan(20_000);
    } finally {
      await client.close();
    }
  });
});
