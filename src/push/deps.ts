/** What the job processor and the end of an item (finish.ts) work with: one process' parts. */
import type { ApiClient } from '../api/index.js';
import type { Clock } from '../clock.js';
import type { DeliveryConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { KeptAnswers } from './kept-answers.js';
import type { AttemptLog } from '../queue/attempts.js';
import type { AuthGate } from '../gate/auth-gate.js';
import type { Keys } from '../store/keys.js';
import type { RateLimiter } from '../gate/limiter.js';
import type { PushGate } from '../gate/push-gate.js';
import type { QueueSet } from '../queue/queues.js';
import type { RedisConnection } from '../store/redis.js';
import type { Stats } from '../store/stats.js';

export interface PushDeps {
  client: ApiClient;
  redis: RedisConnection;
  keys: Keys;
  gate: PushGate;
  limiter: RateLimiter;
  authGate: AuthGate;
  attempts: AttemptLog;
  /** Answers Redis could not take yet, written when it can (kept-answers.ts). */
  kept: KeptAnswers;
  stats: Stats;
  queues: QueueSet;
  delivery: DeliveryConfig;
  clock: Clock;
  logger: Logger;
}
