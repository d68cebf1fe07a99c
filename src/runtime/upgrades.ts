/**
 * Upgrade steps: what a start does once to data an earlier version left behind, in one place (as
 * graphile-worker's `migrate.ts` keeps its migrations). Each step names the version whose data it
 * upgrades and runs once per deployment (or once per spool); when it has run, it is recorded in
 * `keys.upgrades` (a hash: step id → JSON {at, version, changed}), so later starts skip it with one
 * HGET. A step is idempotent: two processes starting together may both run it.
 *
 * When a step may go: once every deployment runs a version newer than its `from` and has started
 * at least once with a version that has the step (docs/internals.md, "Upgrading").
 */
import type { Logger } from '../log.js';
import { carryOverDocumentRecords } from '../gate/document-record.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { appVersion } from '../version.js';
import { carryOverLegacyOutcomes } from '../outcome/legacy-outcomes.js';

export interface UpgradeStep<Scope> {
  /** Stable id: the field in `keys.upgrades`. */
  id: string;
  /** The last version whose data needs the step. */
  from: string;
  what: string;
  /** Returns how many records it changed. */
  run(scope: Scope): Promise<number>;
}

interface DeploymentScope {
  redis: RedisConnection;
  keys: Keys;
  retentionSec: number;
}

/** Steps of the whole deployment, run at every process' start before any item moves. */
export const DEPLOYMENT_UPGRADES: ReadonlyArray<UpgradeStep<DeploymentScope>> = [
  {
    id: 'document-records-compact',
    from: '0.1.0 (issue 14 and before: one doc:<kind>:<delivery> hash per record)',
    what: 'carried the document records of the earlier layout over into the compact shards',
    // Deployments that ran it before this file existed recorded it in their own marker key.
    run: async ({ redis, keys, retentionSec }) =>
      (await redis.exists(keys.documentRecordsMigrated)) === 1 ? 0 : carryOverDocumentRecords(redis, keys, retentionSec),
  },
];

interface SpoolScope {
  redis: RedisConnection;
  keys: Keys;
  spoolId: string;
  logger: Logger;
}

/** Steps of one spool, run by the holder of its lease before it moves files (recorded per spool id). */
export const SPOOL_UPGRADES: ReadonlyArray<UpgradeStep<SpoolScope>> = [
  {
    id: 'outcomes-list',
    from: '0.1.0 (issue 14 and before: outcome messages in a BullMQ queue `outcome.<spool id>`)',
    what: 'carried the outcome messages of the earlier BullMQ queue over into the outcome list',
    run: ({ redis, keys, spoolId, logger }) => carryOverLegacyOutcomes(redis, keys, spoolId, logger),
  },
];

/**
 * Not a step here, since it needs no Redis: a spool without `.spool-id` gets the id it had before
 * the file existed (spool/lease/spool-id.ts, `defaultSpoolId`), written once into the file.
 */

/** Runs each step not yet recorded, in order, and records it. */
export async function runUpgrades<Scope>(
  redis: RedisConnection,
  keys: Keys,
  steps: ReadonlyArray<UpgradeStep<Scope>>,
  scope: Scope,
  logger: Logger,
  fieldSuffix = '',
): Promise<void> {
  for (const step of steps) {
    const field = `${step.id}${fieldSuffix}`;
    if ((await redis.hexists(keys.upgrades, field)) === 1) continue;
    const changed = await step.run(scope);
    await redis.hset(keys.upgrades, field, JSON.stringify({ at: new Date().toISOString(), version: appVersion(), changed }));
    if (changed > 0) logger.info({ upgrade: step.id, from: step.from, changed }, step.what);
  }
}

export async function runSpoolUpgrades(redis: RedisConnection, keys: Keys, spoolId: string, logger: Logger): Promise<void> {
  await runUpgrades(redis, keys, SPOOL_UPGRADES, { redis, keys, spoolId, logger }, logger, `:${spoolId}`);
}

export async function runDeploymentUpgrades(
  ctx: { redis: RedisConnection; keys: Keys; config: { delivery: { completedRetentionSec: number } } },
  logger: Logger,
): Promise<void> {
  await runUpgrades(
    ctx.redis,
    ctx.keys,
    DEPLOYMENT_UPGRADES,
    { redis: ctx.redis, keys: ctx.keys, retentionSec: ctx.config.delivery.completedRetentionSec },
    logger,
  );
}
