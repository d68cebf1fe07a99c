/** What each cron-scheduled housekeeping job does. */
import type { ApiClient } from '../../api/index.js';
import type { Logger } from '../../log.js';
import type { RateLimiter } from '../../gate/limiter.js';
import { deadLetterDeliveries, listDeadLetters } from '../../queue/dead-letter.js';
import type { Context } from '../context.js';
import { pullEvents } from './events-pull.js';
import { reconcileWebhook } from './webhook.js';
import { compactJourneys } from '../../journey/journey-compact.js';

export const HOUSEKEEPING_JOBS = ['rescan', 'webhookReconcile', 'deadLetterSummary', 'eventsPull', 'journeyCompact'] as const;
export type HousekeepingJob = (typeof HOUSEKEEPING_JOBS)[number];

export interface HousekeepingDeps {
  ctx: Context;
  client: ApiClient;
  /** The key's shared limiter: API calls made here take slots like items do. */
  limiter: RateLimiter;
  rescan: () => Promise<void>;
  logger: Logger;
}

export async function runHousekeeping(name: string, deps: HousekeepingDeps): Promise<unknown> {
  switch (name as HousekeepingJob) {
    case 'rescan':
      await deps.rescan();
      return { rescanned: true };
    case 'webhookReconcile':
      return reconcileWebhook(deps.ctx, deps, deps.logger);
    case 'deadLetterSummary': {
      const letters = await listDeadLetters(deps.ctx);
      const byCode: Record<string, number> = {};
      for (const letter of letters)
        byCode[`${letter.kind}:${letter.apiCode ?? letter.errorCode}`] = (byCode[`${letter.kind}:${letter.apiCode ?? letter.errorCode}`] ?? 0) + 1;
      deps.logger[letters.length > 0 ? 'warn' : 'info']({ deadLettered: letters.length, byCode }, 'dead-letter summary');
      return { deadLettered: letters.length, byCode };
    }
    case 'eventsPull':
      return pullEvents(deps.ctx, deps.logger);
    case 'journeyCompact': {
      const { history } = deps.ctx.config;
      const result = await compactJourneys(deps.ctx.redis, deps.ctx.keys, {
        retentionDays: history.retentionDays,
        detailDays: history.detailDays,
        nowMs: Date.now(),
        deadLetterDeliveries: () => deadLetterDeliveries(deps.ctx.queues),
      });
      if (result.folded > 0) deps.logger.info(result, 'journeys folded');
      return result;
    }
    default:
      deps.logger.warn({ name }, 'unknown housekeeping job');
      return null;
  }
}
