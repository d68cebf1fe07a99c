import { z } from 'zod';
import { LANGS, langOf, type Lang } from '../i18n/langs.js';
import { say } from '../i18n/translate.js';

// Every schema of this process is parsed a handful of times (the settings once a process, the
// sandbox's and a notification's bodies now and then): zod's compiled fast path for objects costs
// more to build than it saves here. Without it a command's start is ~90 ms of CPU shorter (`status`:
// 1.39 → 1.30 s, 6 alternating runs; issue 46, sixteenth session).
z.config({ jitless: true });

const ms = z.number().int().nonnegative();

/** Faults a test injects into the running daemon (CARRIER_SYNC_FAILPOINTS; src/failpoints.ts). */
export const FAILPOINTS = ['delivery-thread-freeze', 'worker-connection-end', 'batch-never-seals', 'check-thread-freeze', 'job-run-freeze'] as const;
export type Failpoint = (typeof FAILPOINTS)[number];
const positiveInt = z.number().int().positive();
/** What one file's check may spend on its thread (validate/pool/). */
const checkBudget = z.object({ cpuMs: positiveInt, memoryMb: z.number().int().min(16) }).strict();
const schedule = z.object({ pattern: z.string().min(1).nullable(), tz: z.string().min(1) }).strict();

/** How items are sent: the API's rate limit, retries, the queue's bounds, the delivery thread. */
const deliverySchema = z
  .object({
    ratePerMinute: positiveInt,
    rateWindowMarginMs: ms,
    maxAttempts: positiveInt,
    backoffMs: positiveInt,
    notFoundAttempts: positiveInt,
    maxQueued: positiveInt,
    concurrency: positiveInt,
    maxRateLimitedMs: positiveInt,
    maxUnavailableMs: positiveInt,
    completedRetentionSec: positiveInt,
    lockMs: positiveInt,
    authProbeMs: positiveInt,
    /** The worker role on a thread of its own when one process runs the watcher role too (runtime/delivery-thread/delivery-thread.ts). */
    thread: z.enum(['auto', 'on', 'off']),
    /** How much lower than the main thread's the delivery thread's scheduling priority is (nice steps, Linux). */
    threadNice: z.number().int().min(0).max(19),
  })
  .strict();

/**
 * The schema with its own checks' messages in `lang` (zod's own words come from its locale, given
 * to safeParse): config/load.ts parses with the English one, whose messages `.error.json`, logs and
 * `config check --json` keep, and words the terminal's line with the reader's (issue 45).
 */
function schemaIn(lang: Lang) {
  return objectIn(lang).superRefine(crossChecks(lang));
}

/** The settings' shape, field by field; the checks across fields are crossChecks'. */
function objectIn(lang: Lang) {
  return z
    .object({
      api: z
        .object({
          url: z.url({ protocol: /^https?$/ }).nullable(),
          connectTimeoutMs: positiveInt,
          headersTimeoutMs: positiveInt,
          bodyTimeoutMs: positiveInt,
          connections: positiveInt,
          carrierKey: z.string().min(1).nullable(),
          sellerGroupKey: z.string().min(1).nullable(),
        })
        .strict(),
      redis: redisSchemaIn(lang),
      prefix: z.string().regex(/^[A-Za-z0-9_{}.-]{1,64}$/, say(lang, 'config.check.prefix')),
      spool: spoolSchemaIn(lang),
      checks: z
        .object({
          threads: positiveInt.nullable(),
          onThreadFromBytes: z.number().int().nonnegative(),
          idleMs: positiveInt,
          documents: checkBudget,
          events: checkBudget,
        })
        .strict(),
      delivery: deliverySchema,
      dedup: z.object({ retentionDays: positiveInt }).strict(),
      history: historySchemaIn(lang),
      http: z
        .object({
          port: z.number().int().min(0).max(65535),
          host: z.string().min(1),
          maxIngestBytes: positiveInt,
          uiPassword: z.string().min(1).nullable(),
          ingestToken: z.string().min(1).nullable(),
        })
        .strict(),
      shutdown: z.object({ graceMs: ms }).strict(),
      /** The progress watchdog (runtime/watchdog/watchdog.ts): its bound, and the faults a test injects. */
      watchdog: z.object({ stallMs: z.number().int().min(2000), failpoints: z.array(z.enum(FAILPOINTS)) }).strict(),
      log: z.object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) }).strict(),
      /** `pt_BR`, `pt-br`, `pt_BR.UTF-8` are pt-BR (i18n/langs.ts `langOf`); the config holds the canonical tag. */
      lang: z.preprocess((value) => (typeof value === 'string' ? (langOf(value) ?? value) : value), z.enum(LANGS)),
      webhook: z
        .object({
          id: z.string().min(1),
          url: z.url(),
          headers: z.record(z.string(), z.string()).nullable(),
          events: z.array(z.string().min(1)),
        })
        .strict()
        .nullable(),
      schedules: z
        .object({
          rescan: schedule,
          webhookReconcile: schedule,
          deadLetterSummary: schedule,
          journeyCompact: schedule,
          eventsPull: schedule.extend({
            url: z.url().nullable(),
            authHeader: z.string().min(1),
            token: z.string().min(1).nullable(),
          }),
        })
        .strict(),
      sandbox: z.object({ seedFile: z.string().min(1).nullable(), port: z.number().int().min(0).max(65535) }).strict(),
      notify: notifySchemaIn(lang),
    })
    .strict();
}

/** The combinations of settings that cannot work together, each refused in `lang`. */
function crossChecks(lang: Lang): (config: z.infer<ReturnType<typeof objectIn>>, ctx: z.RefinementCtx) => void {
  return (config, ctx) => {
    if (config.redis.cluster && config.redis.url === null) {
      ctx.addIssue({ code: 'custom', path: ['redis', 'url'], message: say(lang, 'config.check.clusterNeedsUrl') });
    }
    if (config.redis.cluster && config.redis.sentinels.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'sentinels'],
        message: say(lang, 'config.check.clusterWithSentinels'),
      });
    }
    if (config.redis.sentinels.length > 0 && config.redis.url !== null && config.redis.url.includes(',')) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'url'],
        message: say(lang, 'config.check.sentinelUrlOneNode'),
      });
    }
    if (!config.redis.cluster && config.redis.sentinels.length === 0 && config.redis.url?.includes(',') === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'url'],
        message: say(lang, 'config.check.urlSeveralNodes'),
      });
    }
    if (config.redis.sentinels.length === 0 && config.redis.sentinelPassword !== null) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'sentinelPassword'],
        message: say(lang, 'config.check.sentinelPasswordAlone'),
      });
    }
    if (config.redis.cluster && !/^\{[^{}]+\}$/.test(config.prefix)) {
      ctx.addIssue({
        code: 'custom',
        path: ['prefix'],
        message: say(lang, 'config.check.clusterPrefix'),
      });
    }
    if (config.spool.holderFileMs < 2 * config.spool.leaseMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['spool', 'holderFileMs'],
        message: say(lang, 'config.check.holderFile', { min: String(2 * config.spool.leaseMs) }),
      });
    }
    const email = config.notify.email;
    if (email.smtpUrl !== null && (email.from === null || email.to.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['notify', 'email'],
        message: say(lang, 'config.check.emailNeeds'),
      });
    }
    if (config.api.url !== null && config.api.carrierKey === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['api', 'carrierKey'],
        message: say(lang, 'config.check.carrierKeyNeeded'),
      });
    }
  };
}

function notifySchemaIn(lang: Lang) {
  return z
    .object({
      webhook: z.object({ url: z.url({ protocol: /^https?$/ }).nullable(), secret: z.string().min(1).nullable() }).strict(),
      slack: z.object({ url: z.url({ protocol: /^https?$/ }).nullable() }).strict(),
      email: z
        .object({
          smtpUrl: z
            .string()
            .regex(/^smtps?:\/\/[^\s]+$/, say(lang, 'config.check.smtpUrl'))
            .nullable(),
          from: z.string().min(1).nullable(),
          to: z.array(z.string().min(3)),
          requireTls: z.boolean(),
          rejectUnauthorized: z.boolean(),
        })
        .strict(),
      digestMinutes: z.number().positive(),
      checkIntervalMs: positiveInt,
      backlogStuckMinutes: z.number().positive().nullable(),
      redisUnreachableSec: z.number().positive().nullable(),
      spoolUnwatchedSec: z.number().positive().nullable(),
      movesFailingMinutes: z.number().positive().nullable(),
      diskLow: z
        .object({ minFreePercent: z.number().min(0).max(100), minFreeBytes: z.number().int().nonnegative() })
        .strict()
        .nullable(),
      digestSampleIds: positiveInt,
      overviewUrl: z.url({ protocol: /^https?$/ }).nullable(),
      sendTimeoutMs: positiveInt,
      maxAttempts: positiveInt,
      retryBaseMs: positiveInt,
      retryMaxMs: positiveInt,
    })
    .strict();
}

function redisSchemaIn(lang: Lang) {
  return z
    .object({
      url: z
        .string()
        .regex(/^(rediss?|unix):\/\//, say(lang, 'config.check.redisUrl'))
        .nullable(),
      managedDir: z.string().min(1),
      managedPort: z.number().int().min(0).max(65535),
      cluster: z.boolean(),
      sentinels: z.array(z.string().regex(/^(rediss?:\/\/)?[^\s,/:@]+:\d{1,5}$/, say(lang, 'config.check.sentinel'))),
      sentinelName: z.string().min(1),
      sentinelPassword: z.string().min(1).nullable(),
      allowEviction: z.boolean(),
    })
    .strict();
}

function spoolSchemaIn(lang: Lang) {
  /** An IANA zone Intl knows (`America/Sao_Paulo`); a typo (`America/Sao Paulo`) is refused here, not per line. */
  const timeZone = z.string().refine(isTimeZone, say(lang, 'config.check.timeZone'));
  return z
    .object({
      dir: z.string().min(1),
      id: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, say(lang, 'config.check.spoolId'))
        .nullable(),
      writeStableMs: ms,
      usePolling: z.boolean(),
      pollIntervalMs: positiveInt,
      rescanIntervalMs: positiveInt,
      unreadableRefuseMs: positiveInt,
      inboxWindow: positiveInt,
      leaseMs: z.number().int().min(1000),
      holderFileMs: z.number().int().min(2000),
      maxLabelBytes: positiveInt,
      maxCteBytes: positiveInt,
      maxEventsFileBytes: positiveInt,
      maxEventLineBytes: positiveInt,
      /** The warehouse's zone for events-file timestamps written without an offset; null: refused. */
      eventsTimeZone: timeZone.nullable(),
    })
    .strict();
}

function historySchemaIn(lang: Lang) {
  return z
    .object({
      retentionDays: positiveInt,
      /** Days a settled item's journey keeps every step; past them, its days are folded into a compact record (journey/journey-compact.ts). */
      detailDays: z.number().int().min(0),
      /** A link to the tracing tool: `{traceId}` is replaced by an attempt's trace id (docs/tracing.md). */
      traceUrl: z
        .string()
        .regex(/^https?:\/\/\S*\{traceId\}\S*$/, say(lang, 'config.check.traceUrl', { placeholder: '{traceId}' }))
        .nullable(),
    })
    .strict();
}

export const configSchema = schemaIn('en');
/** The same schema, its own checks' messages in Portuguese (the line `start` and `config check` print). */
export const configSchemaPtBr = schemaIn('pt-BR');

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export type Config = z.infer<typeof configSchema>;
export type ApiConfig = Config['api'];
export type SpoolConfig = Config['spool'];
export type ChecksConfig = Config['checks'];
export type DeliveryConfig = Config['delivery'];
export type NotifyConfig = Config['notify'];
export type HistoryConfig = Config['history'];
export type RedisConfig = Config['redis'];
