import { z } from 'zod';
import { LANGS, langOf } from '../i18n/langs.js';

const ms = z.number().int().nonnegative();

/** Faults a test injects into the running daemon (CARRIER_SYNC_FAILPOINTS; src/failpoints.ts). */
export const FAILPOINTS = ['delivery-thread-freeze', 'worker-connection-end', 'batch-never-seals', 'check-thread-freeze'] as const;
export type Failpoint = (typeof FAILPOINTS)[number];
const positiveInt = z.number().int().positive();
/** What one file's check may spend on its thread (validate/pool/). */
const checkBudget = z.object({ cpuMs: positiveInt, memoryMb: z.number().int().min(16) }).strict();
/** An IANA zone Intl knows (`America/Sao_Paulo`); a typo (`America/Sao Paulo`) is refused here, not per line. */
const timeZone = z.string().refine(isTimeZone, 'must be an IANA time zone, e.g. America/Sao_Paulo (see the tz database list)');
const schedule = z.object({ pattern: z.string().min(1).nullable(), tz: z.string().min(1) }).strict();

const notifySchema = z
  .object({
    webhook: z.object({ url: z.url({ protocol: /^https?$/ }).nullable(), secret: z.string().min(1).nullable() }).strict(),
    slack: z.object({ url: z.url({ protocol: /^https?$/ }).nullable() }).strict(),
    email: z
      .object({
        smtpUrl: z
          .string()
          .regex(/^smtps?:\/\/[^\s]+$/, 'must be smtp://user:pass@host:port or smtps://…')
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

export const configSchema = z
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
    redis: z
      .object({
        url: z
          .string()
          .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
          .nullable(),
        managedDir: z.string().min(1),
        managedPort: z.number().int().min(0).max(65535),
        cluster: z.boolean(),
        sentinels: z.array(z.string().regex(/^(rediss?:\/\/)?[^\s,/:@]+:\d{1,5}$/, 'each sentinel is host:port')),
        sentinelName: z.string().min(1),
        sentinelPassword: z.string().min(1).nullable(),
        allowEviction: z.boolean(),
      })
      .strict(),
    prefix: z.string().regex(/^[A-Za-z0-9_{}.-]{1,64}$/, 'letters, digits, _ . - { } only, 1-64 chars'),
    spool: z
      .object({
        dir: z.string().min(1),
        id: z
          .string()
          .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only, 1-64 chars')
          .nullable(),
        writeStableMs: ms,
        usePolling: z.boolean(),
        pollIntervalMs: positiveInt,
        rescanIntervalMs: positiveInt,
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
      .strict(),
    checks: z
      .object({
        threads: positiveInt.nullable(),
        onThreadFromBytes: z.number().int().nonnegative(),
        idleMs: positiveInt,
        documents: checkBudget,
        events: checkBudget,
      })
      .strict(),
    delivery: z
      .object({
        ratePerMinute: positiveInt,
        rateWindowMarginMs: ms,
        maxAttempts: positiveInt,
        backoffMs: positiveInt,
        notFoundAttempts: positiveInt,
        maxQueued: positiveInt,
        concurrency: positiveInt,
        maxRateLimitedMs: positiveInt,
        completedRetentionSec: positiveInt,
        lockMs: positiveInt,
        authProbeMs: positiveInt,
        /** The worker role on a thread of its own when one process runs the watcher role too (runtime/delivery-thread/delivery-thread.ts). */
        thread: z.enum(['auto', 'on', 'off']),
        /** How much lower than the main thread's the delivery thread's scheduling priority is (nice steps, Linux). */
        threadNice: z.number().int().min(0).max(19),
      })
      .strict(),
    dedup: z.object({ retentionDays: positiveInt }).strict(),
    history: z
      .object({
        retentionDays: positiveInt,
        /** A link to the tracing tool: `{traceId}` is replaced by an attempt's trace id (docs/tracing.md). */
        traceUrl: z
          .string()
          .regex(/^https?:\/\/\S*\{traceId\}\S*$/, 'must be an http(s) URL holding {traceId}, e.g. https://tempo.example/trace/{traceId}')
          .nullable(),
      })
      .strict(),
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
        eventsPull: schedule.extend({
          url: z.url().nullable(),
          authHeader: z.string().min(1),
          token: z.string().min(1).nullable(),
        }),
      })
      .strict(),
    sandbox: z.object({ seedFile: z.string().min(1).nullable(), port: z.number().int().min(0).max(65535) }).strict(),
    notify: notifySchema,
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.redis.cluster && config.redis.url === null) {
      ctx.addIssue({ code: 'custom', path: ['redis', 'url'], message: 'REDIS_URL (the cluster seed nodes) is required when redis.cluster is on' });
    }
    if (config.redis.cluster && config.redis.sentinels.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'sentinels'],
        message: 'CARRIER_SYNC_REDIS_SENTINELS and CARRIER_SYNC_REDIS_CLUSTER exclude each other: a Cluster fails over by itself, without sentinels',
      });
    }
    if (config.redis.sentinels.length > 0 && config.redis.url !== null && config.redis.url.includes(',')) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'url'],
        message: 'with CARRIER_SYNC_REDIS_SENTINELS, REDIS_URL names one node (its user, password, db and TLS); the sentinels find the primary',
      });
    }
    if (!config.redis.cluster && config.redis.sentinels.length === 0 && config.redis.url?.includes(',') === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'url'],
        message: 'REDIS_URL lists several nodes: set CARRIER_SYNC_REDIS_CLUSTER=true for a Cluster, or CARRIER_SYNC_REDIS_SENTINELS for Sentinel',
      });
    }
    if (config.redis.sentinels.length === 0 && config.redis.sentinelPassword !== null) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis', 'sentinelPassword'],
        message: 'CARRIER_SYNC_REDIS_SENTINEL_PASSWORD is set but CARRIER_SYNC_REDIS_SENTINELS is not',
      });
    }
    if (config.redis.cluster && !/^\{[^{}]+\}$/.test(config.prefix)) {
      ctx.addIssue({
        code: 'custom',
        path: ['prefix'],
        message: 'on Redis Cluster the prefix must be one hash tag, e.g. {carrier-sync}, so every key of a deployment shares a slot',
      });
    }
    if (config.spool.holderFileMs < 2 * config.spool.leaseMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['spool', 'holderFileMs'],
        message: `must be at least 2 spool.leaseMs (${2 * config.spool.leaseMs}): the holder file is renewed with the lease`,
      });
    }
    const email = config.notify.email;
    if (email.smtpUrl !== null && (email.from === null || email.to.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['notify', 'email'],
        message: 'CARRIER_SYNC_NOTIFY_EMAIL_FROM and CARRIER_SYNC_NOTIFY_EMAIL_TO are required when CARRIER_SYNC_NOTIFY_SMTP_URL is set',
      });
    }
    if (config.api.url !== null && config.api.carrierKey === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['api', 'carrierKey'],
        message: 'CARRIER_SYNC_CARRIER_KEY is required when CARRIER_SYNC_API_URL is set',
      });
    }
  });

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
