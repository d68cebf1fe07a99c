import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { Logger } from 'pino';
import { KeyRing } from './auth.js';
import { registerControl } from './control.js';
import { mergeFaults, NO_FAULTS, type SandboxFaults } from './faults.js';
import { installPipeline } from './pipeline.js';
import { SlidingWindowLimiter } from './rate-limit.js';
import { RequestLog, type SandboxRequest } from './request-log.js';
import type { RouteContext } from './routes/context.js';
import { registerCollecting } from './routes/collecting.js';
import { registerDocuments } from './routes/documents.js';
import { registerQuotation } from './routes/quotation.js';
import { registerSeller } from './routes/seller.js';
import { registerWebhook } from './routes/webhook.js';
import { loadSeed, type SandboxSeed } from './seed.js';
import { SandboxState } from './state.js';

/**
 * The sandbox: a local implementation of the whole api-contract.md, read independently of
 * src/api/ so that the two readings check each other. It imports nothing else from src/.
 * Decisions the contract leaves open are listed in docs/sandbox.md.
 */

export type { SandboxFaults } from './faults.js';
export type { SandboxEndpoint, SandboxRequest } from './request-log.js';
export type { SandboxSeed } from './seed.js';
export type { CteRecord, DeliveryInput, LabelRecord, SandboxDelivery, SandboxEvent, SandboxOrder, SandboxWebhook } from './state.js';
export { SandboxState } from './state.js';

export interface SandboxOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** A seed object or the path of a JSON seed; default config/sandbox-seed.json of this package. */
  seed?: SandboxSeed | string;
  /** Per key, sliding 60 s window, every API endpoint. Default 300. */
  ratePerMinute?: number;
  /** Unknown UUID-shaped delivery ids are created on first use, PENDING, for the calling carrier. Default false. */
  autoCreateDeliveries?: boolean;
  faults?: Partial<SandboxFaults>;
  /** Larger bodies get 413. Default 16 MiB. */
  bodyLimitBytes?: number;
  /** Default false: no logging. */
  logger?: Logger | false;
}

export interface SandboxHandle {
  url: string;
  port: number;
  /** Idempotent; open connections are closed. */
  close(): Promise<void>;
  setFaults(patch: Partial<SandboxFaults>): void;
  faults(): SandboxFaults;
  requests(): readonly SandboxRequest[];
  clearRequests(): void;
  state: SandboxState;
  /** id → raw key, for tests. */
  keys: { carriers: Record<string, string>; sellerGroups: Record<string, string> };
}

export const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const state = new SandboxState(loadSeed(options.seed));
  const log = new RequestLog();
  const limiter = new SlidingWindowLimiter(options.ratePerMinute ?? 300);
  let faults = mergeFaults({ ...NO_FAULTS }, options.faults ?? {});
  const logger = options.logger === undefined || options.logger === false ? undefined : options.logger.child({ mod: 'sandbox' });
  const now = (): number => Date.now();
  const setFaults = (patch: Partial<SandboxFaults>): void => {
    faults = mergeFaults(faults, patch);
    logger?.info({ faults }, 'sandbox faults changed');
  };

  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    forceCloseConnections: true,
  });
  const pipeline = installPipeline(app, { log, keyRing: new KeyRing(state), limiter, faults: () => faults, now, random: Math.random, logger });
  const ctx: RouteContext = { state, pipeline, isAutoCreating: options.autoCreateDeliveries ?? false, now };
  registerCollecting(app, ctx);
  registerDocuments(app, ctx);
  registerWebhook(app, ctx);
  registerSeller(app, ctx);
  registerQuotation(app, ctx);
  registerControl(app, { state, log, faults: () => ({ ...faults }), setFaults, now });

  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger?.info({ url }, 'sandbox API listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close: () => (closing ??= app.close().then(() => logger?.info({ url }, 'sandbox API closed'))),
    setFaults,
    faults: () => ({ ...faults }),
    requests: () => log.list(),
    clearRequests: () => log.clear(),
    state,
    keys: {
      carriers: Object.fromEntries([...state.carriers.values()].map((carrier) => [carrier.id, carrier.key])),
      sellerGroups: Object.fromEntries([...state.sellerGroups.values()].map((group) => [group.id, group.key])),
    },
  };
}
