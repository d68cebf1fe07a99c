import type { DeliveryConfig } from '../../src/config/schema.js';

/** Delivery settings for tests that open the queues without loading a config file. */
export const TEST_DELIVERY: DeliveryConfig = {
  ratePerMinute: 300,
  rateWindowMarginMs: 1000,
  maxAttempts: 3,
  backoffMs: 1000,
  notFoundAttempts: 2,
  maxQueued: 5000,
  concurrency: 1,
  maxRateLimitedMs: 60_000,
  maxUnavailableMs: 60_000,
  completedRetentionSec: 3600,
  lockMs: 30_000,
  authProbeMs: 10_000,
  thread: 'off',
  threadNice: 5,
};
