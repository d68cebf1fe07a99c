/**
 * One API client built from the config's timeouts and the resolved target (real API or sandbox).
 * Every request made with the key takes a slot of its shared limiter first (`rateLimiterFor` in
 * gate/limiter.ts).
 */
import { createApiClient, type ApiClient, type ApiClientOptions } from '../api/index.js';
import type { Config } from '../config/schema.js';
import type { ApiTarget } from './api-target.js';

export function apiClientFor(
  config: Readonly<Config>,
  target: ApiTarget,
  extra: Partial<Pick<ApiClientOptions, 'connections' | 'logger' | 'onResponse'>> = {},
): ApiClient {
  return createApiClient({
    baseUrl: target.url,
    carrierKey: target.carrierKey,
    sellerGroupKey: target.sellerGroupKey,
    connectTimeoutMs: config.api.connectTimeoutMs,
    headersTimeoutMs: config.api.headersTimeoutMs,
    bodyTimeoutMs: config.api.bodyTimeoutMs,
    connections: config.api.connections,
    ...extra,
  });
}
