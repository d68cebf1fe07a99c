import type { Logger } from 'pino';
import { defaultSeedPath } from './seed.js';
import { startSandbox, type SandboxHandle } from './server.js';

/**
 * Entry point of `carrier-sync sandbox [--port N]`: starts the sandbox API and returns its handle;
 * the caller owns the process (signals, exit) and closes the handle on shutdown.
 */

export interface RunSandboxOptions {
  /** Default 0 (a free port; the URL is logged). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Path of a JSON seed; default config/sandbox-seed.json. */
  seedFile?: string;
  logger?: Logger;
  /** Create unknown UUID-shaped deliveries on first use (the daemon's embedded trial mode). */
  autoCreateDeliveries?: boolean;
}

export async function runSandbox(options: RunSandboxOptions = {}): Promise<SandboxHandle> {
  const handle = await startSandbox({
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.seedFile === undefined ? {} : { seed: options.seedFile }),
    logger: options.logger ?? false,
    ...(options.autoCreateDeliveries === undefined ? {} : { autoCreateDeliveries: options.autoCreateDeliveries }),
  });
  options.logger?.child({ mod: 'sandbox' }).info(
    // Ids, not keys (a person once sent a carrier's id as its key): the keys are each entry's `key` in the seed.
    {
      url: handle.url,
      carrierIds: Object.keys(handle.keys.carriers),
      sellerGroupIds: Object.keys(handle.keys.sellerGroups),
      seedFile: options.seedFile ?? defaultSeedPath(),
    },
    "sandbox API ready; each carrier's and seller group's key is its `key` in the seed file",
  );
  return handle;
}
