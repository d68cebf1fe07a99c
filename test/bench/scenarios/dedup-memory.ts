/**
 * dedup-memory (issue 23, item 1): what Redis keeps per event_at claim, at 100,000 and 1,000,000
 * events (100,000 alone with --quick), in this version's layout (12-byte records in shard
 * strings, gate/event-claims.ts) and in the earlier one (a `dedup:<delivery>` hash per delivery, instant →
 * source id, EXPIRE on every new claim: the earlier script, run here as it was), in the same run.
 *
 * Each layout gets the same events: deliveries with 4 events each (UUID delivery ids), instants as
 * `parseEventAt` writes them, sources as a file's (`file:<claim id>:<line>`), claimed 500 at a time
 * (enqueue.ts's chunk), one script call each, on a private redis-server. Figure: what deleting the
 * claim keys frees, divided by the events (their keys' Redis bookkeeping included; the cached
 * scripts and client buffers are the fixed costs taken out). Also the gross used_memory growth,
 * the Redis CPU per claim (from `INFO cpu`) and a second pass of the same claims (all lookups).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createDedupMemory } from '../../../src/gate/event-claims.js';
import { createKeys, type Keys } from '../../../src/store/keys.js';
import { benchPrefix, redisCpuSeconds, redisFacts, startPrivateRedis, usedMemory, type BenchRedis } from '../support/redis.js';
import type { Figure, Scenario } from '../support/report.js';
import { round } from '../support/wait.js';

/** Issue 23 item 1: bytes of Redis per event kept, fixed costs taken out. */
export const DEDUP_BYTES_PER_EVENT_TARGET = 30;
const CHUNK = 500;
const EVENTS_PER_DELIVERY = 4;

// The earlier layout's claim, as gate/event-claims.ts had it (KEYS: 1 the delivery's hash; ARGV: 1 instant,
// 2 source, 3 ttl s): kept here to measure the layout it replaces.
const EARLIER_CLAIM_LUA = `
local dedupKey = KEYS[1]
local instant, source, ttlSec = ARGV[1], ARGV[2], ARGV[3]
local owner = redis.call('HGET', dedupKey, instant)
if owner == false then
  redis.call('HSET', dedupKey, instant, source)
  redis.call('EXPIRE', dedupKey, ttlSec)
  return 1
end
if owner == source then return 2 end
return 0
`;

interface Event {
  deliveryId: string;
  instantKey: string;
  sourceId: string;
}
type Layout = 'compact' | 'earlier';
type Claim = (event: Event) => Promise<unknown>;

interface Measure {
  layout: Layout;
  events: number;
  keptBytesPerEvent: number;
  grossBytesPerEvent: number;
  keys: number;
  claimRedisCpuUs: number;
  lookupRedisCpuUs: number;
  claimsPerSec: number;
}

function eventsOf(count: number): Event[] {
  const claimId = randomBytes(8).toString('hex');
  const base = Date.UTC(2026, 2, 1);
  const out: Event[] = [];
  let deliveryId = '';
  for (let i = 0; i < count; i += 1) {
    if (i % EVENTS_PER_DELIVERY === 0) deliveryId = randomUUID();
    const instant = new Date(base + i * 1237).toISOString().replace(/\.?0+Z$/, 'Z');
    out.push({ deliveryId, instantKey: instant, sourceId: `file:${claimId}:${i + 1}` });
  }
  return out;
}

async function claimAll(events: readonly Event[], claim: Claim): Promise<void> {
  for (let start = 0; start < events.length; start += CHUNK) await Promise.all(events.slice(start, start + CHUNK).map(claim));
}

function claimOf(redis: Redis, keys: Keys, layout: Layout, retentionDays: number): Claim {
  if (layout === 'compact') {
    const dedup = createDedupMemory(redis, keys, retentionDays);
    return (e) => dedup.claim(e.deliveryId, e.instantKey, e.sourceId);
  }
  redis.defineCommand('benchEarlierDedupClaim', { numberOfKeys: 1, lua: EARLIER_CLAIM_LUA });
  const call = (redis as unknown as { benchEarlierDedupClaim: (key: string, ...args: Array<string | number>) => Promise<unknown> }).benchEarlierDedupClaim;
  return (e) => call.call(redis, keys.dedup(e.deliveryId), e.instantKey, e.sourceId, retentionDays * 86_400);
}

async function deleteUnder(redis: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, names] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    if (names.length > 0) deleted += await redis.del(...names);
  } while (cursor !== '0');
  return deleted;
}

/** Claims `count` fresh events in one layout under a fresh prefix, and what that kept. */
async function measure(redis: Redis, layout: Layout, count: number): Promise<Measure> {
  const prefix = benchPrefix('dedup');
  const keys = createKeys(prefix);
  const claim = claimOf(redis, keys, layout, 90);
  const events = eventsOf(count);
  // Warm-up: the script cached and the connection's buffers grown, then its keys gone.
  await claimAll(eventsOf(CHUNK), claim);
  await deleteUnder(redis, `${prefix}:*`);
  const before = await usedMemory(redis);
  const cpu0 = await redisCpuSeconds(redis);
  const started = Date.now();
  await claimAll(events, claim);
  const elapsedMs = Date.now() - started;
  const cpu1 = await redisCpuSeconds(redis);
  const after = await usedMemory(redis);
  await claimAll(events, claim); // every one found: own
  const cpu2 = await redisCpuSeconds(redis);
  const settled = await usedMemory(redis);
  const keyCount = await deleteUnder(redis, `${prefix}:*`);
  const freed = settled - (await usedMemory(redis));
  return {
    layout,
    events: count,
    keptBytesPerEvent: round(freed / count, 1),
    grossBytesPerEvent: round((after - before) / count, 1),
    keys: keyCount,
    claimRedisCpuUs: round(((cpu1 - cpu0) * 1e6) / count, 1),
    lookupRedisCpuUs: round(((cpu2 - cpu1) * 1e6) / count, 1),
    claimsPerSec: Math.round((count * 1000) / elapsedMs),
  };
}

function figuresOf(m: Measure, earlier: Measure | undefined): Figure[] {
  const n = m.events.toLocaleString('en-US');
  return [
    {
      metric: `claims kept, ${n} events: bytes per event (fixed costs out)`,
      value: m.keptBytesPerEvent,
      unit: 'B',
      reference: earlier === undefined ? '' : `earlier layout ${earlier.keptBytesPerEvent} B (${earlier.keys.toLocaleString('en-US')} keys)`,
      target: `≤ ${DEDUP_BYTES_PER_EVENT_TARGET} B`,
      isMet: m.keptBytesPerEvent <= DEDUP_BYTES_PER_EVENT_TARGET,
    },
    {
      metric: `Redis CPU per claim, ${n} events (new / found)`,
      value: `${m.claimRedisCpuUs} / ${m.lookupRedisCpuUs}`,
      unit: 'µs',
      reference: earlier === undefined ? '' : `earlier layout ${earlier.claimRedisCpuUs} / ${earlier.lookupRedisCpuUs} µs`,
    },
  ];
}

export const dedupMemoryScenario: Scenario = {
  name: 'dedup-memory',
  async run(env) {
    const counts = env.isQuick ? [100_000] : [100_000, 1_000_000];
    const ownRedis: BenchRedis | null = process.env['CARRIER_SYNC_TEST_REDIS_URL'] ? null : await startPrivateRedis(4096);
    const redisUrl = ownRedis?.url ?? env.redisUrl;
    const facts = await redisFacts(redisUrl);
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const measures: Measure[] = [];
    try {
      for (const count of counts) {
        for (const layout of ['compact', 'earlier'] as const) {
          env.progress(`dedup-memory: ${count} events, ${layout} layout`);
          measures.push(await measure(redis, layout, count));
        }
      }
    } finally {
      redis.disconnect();
      await ownRedis?.stop();
    }
    const compact = measures.filter((m) => m.layout === 'compact');
    const earlierOf = (m: Measure): Measure | undefined => measures.find((e) => e.layout === 'earlier' && e.events === m.events);
    return {
      figures: compact.flatMap((m) => figuresOf(m, earlierOf(m))),
      notes: [
        `redis ${facts.version} (${ownRedis === null ? 'CARRIER_SYNC_TEST_REDIS_URL' : 'private'}); ${EVENTS_PER_DELIVERY} events a delivery, UUID delivery ids, claimed ${CHUNK} at a time`,
        ...measures.map(
          (m) =>
            `${m.layout} ${m.events}: kept ${m.keptBytesPerEvent} B/event, gross ${m.grossBytesPerEvent} B/event, ${m.keys} keys, ${m.claimsPerSec} claims/s, Redis CPU ${m.claimRedisCpuUs} µs a new claim, ${m.lookupRedisCpuUs} µs a found one`,
        ),
      ],
      details: { measures, facts },
    };
  },
};
