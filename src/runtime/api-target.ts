/**
 * Where requests go. With CARRIER_SYNC_API_URL set: there, with the configured keys. Unset: an
 * embedded sandbox API on loopback, with its seed's first carrier key — loudly logged, because
 * nothing sent there reaches a real platform.
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { Closers } from './closers.js';

export interface ApiTarget {
  url: string;
  carrierKey: string;
  sellerGroupKey: string | null;
  isSandbox: boolean;
}

/**
 * The carrier key requests go out under, found without starting anything: the configured key when
 * the API URL is set; else the embedded sandbox's, its seed's first carrier (as resolveApiTarget
 * picks it). The rate limiter's window is kept per key, so `status` needs it in every mode.
 */
export async function carrierKeyOf(config: Readonly<Config>): Promise<string | null> {
  if (config.api.url !== null) return config.api.carrierKey;
  const { loadSeed } = await import('../sandbox/seed.js');
  return loadSeed(config.sandbox.seedFile ?? undefined).carriers[0]?.key ?? null;
}

export async function resolveApiTarget(config: Readonly<Config>, logger: Logger, closers: Closers): Promise<ApiTarget> {
  if (config.api.url !== null) {
    return { url: config.api.url, carrierKey: config.api.carrierKey ?? '', sellerGroupKey: config.api.sellerGroupKey, isSandbox: false };
  }
  const { runSandbox } = await import('../sandbox/run.js');
  const sandbox = await runSandbox({
    port: config.sandbox.port,
    host: '127.0.0.1',
    seedFile: config.sandbox.seedFile ?? undefined,
    autoCreateDeliveries: true,
    // The sandbox binds `mod: sandbox` itself; binding it here too would write the key twice.
    logger,
  });
  closers.push('embedded sandbox', () => sandbox.close());
  const [carrierKey] = Object.values(sandbox.keys.carriers);
  const [sellerGroupKey] = Object.values(sandbox.keys.sellerGroups);
  logger.warn(
    { url: sandbox.url },
    '!!! CARRIER_SYNC_API_URL is not set: sending to an EMBEDDED SANDBOX API on loopback. Nothing reaches the real Delivery Logistics API. !!!',
  );
  return { url: sandbox.url, carrierKey: carrierKey ?? '', sellerGroupKey: sellerGroupKey ?? null, isSandbox: true };
}
