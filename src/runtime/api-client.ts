/**
 * One API client built from the config's timeouts and the resolved target (real API or sandbox).
 * Every request made with the key takes a slot of its shared limiter first (`rateLimiterFor` in
 * gate/limiter.ts). Keys given as `*_FILE` follow their file (config/secret-file.ts): a rotated
 * Secret's key goes out without a restart. The limiter and the push gate stay named by the key the
 * process started with.
 */
import { createApiClient, type ApiClient, type ApiClientOptions } from '../api/index.js';
import type { Config } from '../config/schema.js';
import type { ApiTarget } from './api-target.js';
import { liveSecret } from '../config/secret-file.js';

export function apiClientFor(
  config: Readonly<Config>,
  target: ApiTarget,
  extra: Partial<Pick<ApiClientOptions, 'connections' | 'logger' | 'onResponse'>> = {},
): ApiClient {
  return createApiClient({
    baseUrl: target.url,
    carrierKey: target.isSandbox ? target.carrierKey : liveSecret(process.env, 'CARRIER_SYNC_CARRIER_KEY', target.carrierKey),
    sellerGroupKey:
      target.isSandbox || target.sellerGroupKey === null
        ? target.sellerGroupKey
        : liveSecret(process.env, 'CARRIER_SYNC_SELLER_GROUP_KEY', target.sellerGroupKey),
    connectTimeoutMs: config.api.connectTimeoutMs,
    headersTimeoutMs: config.api.headersTimeoutMs,
    bodyTimeoutMs: config.api.bodyTimeoutMs,
    connections: config.api.connections,
    ...extra,
  });
}
