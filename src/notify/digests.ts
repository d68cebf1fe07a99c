/**
 * The dead-letter and refused-file digests: what piled up since the last digest, grouped by kind
 * and code, sent `periodMs` after the first new one (Alertmanager's group wait: a burst of fifty
 * makes one message) and never when there is nothing new.
 *
 * Once across processes and restarts: a digest is claimed by moving its cursor in one atomic step
 * (the dead letters' time cursor; the refusals' "counts already reported" snapshot), so a second
 * scheduler, or this one after a restart, finds nothing left to report.
 */
import { isFailedByRedis } from '../queue/redis-failures.js';
import { isRefusedAfterSending } from '../errors.js';
import type { Job } from 'bullmq';
import { readRefusals } from '../store/activity.js';
import type { AttemptLog } from '../queue/attempts.js';
import { ITEM_KINDS, type ItemKind, type Keys } from '../store/keys.js';
import type { ItemJob } from '../store/payloads.js';
import type { QueueSet } from '../queue/queues.js';
import type { Translate } from '../i18n/translate.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';
import type { Words } from './conditions.js';

export interface DigestSources {
  redis: RedisConnection;
  keys: Keys;
  queues: QueueSet;
  attempts: AttemptLog;
  /** Words in CARRIER_SYNC_LANG. */
  t: Translate;
}

export interface DigestOptions {
  periodMs: number;
  /** Delivery ids (files) named per group. */
  sampleIds: number;
  /** Linked from the digest; null: no link. */
  overviewUrl: string | null;
}

export interface DigestGroup {
  kind: string;
  code: string;
  count: number;
  sample: string[];
}

/** Dead letters read one by one per digest and kind (their codes); beyond, they are only counted. */
const READ_MAX = 500;

// KEYS: 1 cursor. ARGV: 1 the cursor the caller read, 2 the new one. Returns 1 when this call moved it, else 0.
const MOVE_CURSOR = defineScript(
  'notifyMoveCursor',
  `
local cursorKey = KEYS[1]
local seen, next = ARGV[1], ARGV[2]
if redis.call('GET', cursorKey) ~= seen then return 0 end
redis.call('SET', cursorKey, next)
return 1
`,
);

/** The dead letters of (cursor, now], when the oldest of them waited `periodMs`; null otherwise. */
export async function takeDeadLetterDigest(sources: DigestSources, options: DigestOptions, nowMs: number): Promise<Words | null> {
  const { redis, keys, queues } = sources;
  const cursor = await redis.get(keys.notifyDeadLetterCursor);
  if (cursor === null) {
    // First run: the dead letters already there were never news.
    await redis.set(keys.notifyDeadLetterCursor, String(nowMs), 'NX');
    return null;
  }
  const failedKey = (kind: ItemKind): string => queues.items[kind].keys['failed']!;
  const oldest = await Promise.all(
    ITEM_KINDS.map(async (kind) => (await redis.zrangebyscore(failedKey(kind), `(${cursor}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1))[1]),
  );
  const firstMs = Math.min(...oldest.filter((score): score is string => score !== undefined).map(Number));
  if (!Number.isFinite(firstMs) || firstMs + options.periodMs > nowMs) return null;
  if (Number(await MOVE_CURSOR(redis, [keys.notifyDeadLetterCursor], [cursor, String(nowMs)])) !== 1) return null;

  const groups = new Map<string, DigestGroup>();
  let total = 0;
  for (const kind of ITEM_KINDS) {
    const ids = await redis.zrangebyscore(failedKey(kind), `(${cursor}`, String(nowMs));
    total += ids.length;
    const unread = ids.length - Math.min(ids.length, READ_MAX);
    for (const id of ids.slice(0, READ_MAX)) {
      const job = (await queues.items[kind].getJob(id)) as Job<ItemJob> | undefined;
      // Failed by a Redis error, not dead-lettered: put back to work (queue/redis-failures.ts), no news.
      if (job !== undefined && isFailedByRedis(job)) {
        total -= 1;
        continue;
      }
      const history = await sources.attempts.read(id);
      const last = history[history.length - 1];
      const code = last?.apiCode ?? last?.code ?? /^([A-Z][A-Z_]*):/.exec(job?.failedReason ?? '')?.[1] ?? 'UNKNOWN';
      addTo(groups, kind, code, job?.data.deliveryId ?? id, options.sampleIds);
    }
    if (unread > 0) addTo(groups, kind, 'NOT_READ', '', 0, unread);
  }
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind) || a.code.localeCompare(b.code));
  return {
    summary: sources.t('notify.deadLetters.summary', { total, since: new Date(Number(cursor)).toISOString() }),
    details: {
      total,
      from: new Date(Number(cursor)).toISOString(),
      to: new Date(nowMs).toISOString(),
      groups: sorted,
      ...(options.overviewUrl === null ? {} : { overview: options.overviewUrl }),
      action: sources.t('notify.deadLetters.action'),
    },
  };
}

function addTo(groups: Map<string, DigestGroup>, kind: string, code: string, id: string, sampleIds: number, by = 1): void {
  const key = `${kind}\u0000${code}`;
  const group = groups.get(key) ?? { kind, code, count: 0, sample: [] };
  group.count += by;
  if (id !== '' && group.sample.length < sampleIds) group.sample.push(id);
  groups.set(key, group);
}

// KEYS[1] refusal counts by code (hash), KEYS[2] counts already reported (hash), KEYS[3] since when
// new refusals wait (ms). ARGV[1] now (ms), ARGV[2] period (ms). Returns nil while there is nothing
// to report or the wait is not over; else {since, code1, n1, code2, n2, …}, having marked them reported.
const TAKE_REFUSALS = defineScript(
  'notifyTakeRefusals',
  `
local countsKey, reportedKey, sinceKey = KEYS[1], KEYS[2], KEYS[3]
local nowMs, periodMs = ARGV[1], ARGV[2]
local counts = redis.call('HGETALL', countsKey)
if redis.call('EXISTS', reportedKey) == 0 then
  redis.call('HSET', reportedKey, '_', '0')
  for i = 1, #counts, 2 do redis.call('HSET', reportedKey, counts[i], counts[i + 1]) end
  return false
end
local news = {}
for i = 1, #counts, 2 do
  local n = tonumber(counts[i + 1]) - tonumber(redis.call('HGET', reportedKey, counts[i]) or '0')
  if n > 0 then
    table.insert(news, counts[i])
    table.insert(news, tostring(n))
  end
end
if #news == 0 then
  redis.call('DEL', sinceKey)
  return false
end
local since = redis.call('GET', sinceKey)
if not since then
  since = nowMs
  redis.call('SET', sinceKey, since)
end
if tonumber(nowMs) - tonumber(since) < tonumber(periodMs) then return false end
for i = 1, #counts, 2 do redis.call('HSET', reportedKey, counts[i], counts[i + 1]) end
redis.call('DEL', sinceKey)
table.insert(news, 1, since)
return news
`,
);

const KIND_OF_CODE: ReadonlyArray<readonly [string, string]> = [
  ['LABEL_', 'labels'],
  ['CTE_', 'cte'],
  ['EVENT_', 'events'],
];

/** Files refused locally since the last digest, once the first of them waited `periodMs`; null otherwise. */
export async function takeRefusalDigest(
  sources: Pick<DigestSources, 'redis' | 'keys' | 't'>,
  options: DigestOptions & { lookBackMs: number },
  nowMs: number,
): Promise<Words | null> {
  const { redis, keys } = sources;
  const taken = (await TAKE_REFUSALS(redis, [keys.refusalCounts, keys.notifyRefusalsReported, keys.notifyRefusalsSince], [nowMs, options.periodMs])) as
    string[] | null;
  if (taken === null) return null;
  const sinceMs = Number(taken[0]);
  const latest = (await readRefusals(redis, keys)).latest.filter((r) => Date.parse(r.at) >= sinceMs - options.lookBackMs);
  const groups: DigestGroup[] = [];
  let total = 0;
  for (let i = 1; i + 1 < taken.length; i += 2) {
    const code = taken[i]!;
    const count = Number(taken[i + 1]);
    total += count;
    const samples = latest.filter((r) => r.code === code);
    const kind = samples[0]?.kind ?? KIND_OF_CODE.find(([prefix]) => code.startsWith(prefix))?.[1] ?? 'spool';
    groups.push({ kind, code, count, sample: samples.slice(0, options.sampleIds).map((r) => r.file) });
  }
  groups.sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
  // "never sent" is not true of a file refused after its records went out: the summary says how many those are.
  const sentFirst = groups.filter((group) => isRefusedAfterSending(group.code)).reduce((sum, group) => sum + group.count, 0);
  return {
    summary: sentFirst === 0 ? sources.t('notify.refused.summary', { total }) : sources.t('notify.refused.summarySent', { total, sent: sentFirst }),
    details: {
      total,
      from: new Date(sinceMs - options.lookBackMs).toISOString(),
      to: new Date(nowMs).toISOString(),
      groups,
      ...(options.overviewUrl === null ? {} : { overview: options.overviewUrl }),
      action: sources.t('notify.refused.action'),
    },
  };
}
