/**
 * The journey's file indexes on a real Redis (journey/journey.ts `fileIndexEntry`, `shaIndexEntry`;
 * journey-read.ts `findByFile`, `findBySha256`): sharded small sorted sets that stay listpacks, and
 * the one-set-a-day layout written before the upgrade still found.
 */
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { appendSteps, epochDayOf, fileIndexEntry, prepareJourney, shaIndexEntry, type JourneyEntry } from '../../src/journey/journey.js';
import { findByFile, findBySha256 } from '../../src/journey/journey-read.js';
import { createKeys } from '../../src/store/keys.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('journey-index');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'journey-index-test');
const TTL_SEC = 86_400;

afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

function labelSeen(deliveryId: string, content: string): JourneyEntry {
  const name = `${deliveryId}.pdf`;
  return { deliveryId, step: { k: 'l', s: 'seen', f: name, h: sha(content), z: 100, m: 0 }, file: { name, sha256: sha(content) } };
}

function eventReceived(deliveryId: string, fileName: string, n: number): JourneyEntry {
  return {
    deliveryId,
    step: { k: 'e', s: 'received', e: `2026-11-25T10:00:0${n}Z`, i: `abc00${n}`, f: fileName, l: n },
    file: { name: fileName, sha256: sha(fileName) },
  };
}

describe('journey file indexes', () => {
  it('finds a file by name and by sha256 prefix in the sharded indexes, each shard a compact listpack', async () => {
    prepareJourney(redis);
    const now = Date.now();
    const entries: JourneyEntry[] = [];
    for (let n = 0; n < 3000; n += 1) entries.push(labelSeen(`d-${n}`, `label ${n}`));
    entries.push(eventReceived('d-e1', 'events-2026-11-25.ndjson', 1), eventReceived('d-e2', 'events-2026-11-25.ndjson', 2));
    await appendSteps(redis.pipeline(), keys, TTL_SEC, entries, now).exec();

    const byName = await findByFile(redis, keys, ['events-2026-11-25.ndjson'], 30, now);
    expect(new Set(byName.map((s) => s.delivery_id))).toEqual(new Set(['d-e1', 'd-e2']));
    const bySha = await findBySha256(redis, keys, sha('label 1234').slice(0, 6), 30, now);
    expect(bySha.map((s) => s.delivery_id)).toEqual(['d-1234']);

    const day = epochDayOf(now);
    const shard = shaIndexEntry(sha('label 1234'), '').shard;
    expect(await redis.object('ENCODING', keys.journeyHashes(day, shard))).toBe('listpack');
    expect(await redis.object('ENCODING', keys.journeyFiles(day, fileIndexEntry('events-2026-11-25.ndjson', '').shard))).toBe('listpack');
    expect(await redis.ttl(keys.journeyHashes(day, shard))).toBeGreaterThan(TTL_SEC);
  });

  it("writes an events file's steps and index members in one call, its sha256 member once", async () => {
    prepareJourney(redis);
    const now = Date.now();
    const fileName = 'events-2026-11-26.ndjson';
    const entries: JourneyEntry[] = [];
    for (let n = 0; n < 200; n += 1) entries.push(eventReceived(`d-f${n}`, fileName, n % 10));
    const pipeline = appendSteps(redis.pipeline(), keys, TTL_SEC, entries, now);
    // One script call writes the steps and both indexes (each member once): not a ZADD an event
    // and index with an EXPIREAT a key beside it (403 commands before issue 46).
    expect(pipeline.length).toBe(1);
    await pipeline.exec();

    const day = epochDayOf(now);
    const { shard: nameShard, member: namePrefix } = fileIndexEntry(fileName, '');
    const named = (await redis.zrange(keys.journeyFiles(day, nameShard), 0, -1)).filter((m) => m.startsWith(namePrefix));
    expect(named).toHaveLength(200);
    const { shard: shaShard, member } = shaIndexEntry(sha(fileName), fileName);
    expect(await redis.zrange(keys.journeyHashes(day, shaShard), 0, -1)).toContain(member);
    expect(await redis.ttl(keys.journeyHashes(day, shaShard))).toBeGreaterThan(TTL_SEC);
    const byName = await findByFile(redis, keys, [fileName], 30, now);
    expect(new Set(byName.map((s) => s.delivery_id)).size).toBe(200);
    const bySha = await findBySha256(redis, keys, sha(fileName).slice(0, 8), 30, now);
    expect(new Set(bySha.map((s) => s.delivery_id)).size).toBe(200);
  });

  it('still finds files recorded in the one-set-a-day indexes written before the upgrade', async () => {
    prepareJourney(redis);
    const now = Date.now();
    const day = epochDayOf(now);
    // The steps, then the earlier index members written as the earlier version wrote them.
    const old = labelSeen('d-old', 'old label');
    const oldEvent = eventReceived('d-old-e', 'old-events.csv', 3);
    await appendSteps(
      redis.pipeline(),
      keys,
      TTL_SEC,
      [
        { ...old, file: undefined },
        { ...oldEvent, file: undefined },
      ] as JourneyEntry[],
      now,
    ).exec();
    await redis.zadd(keys.journeyHashesUnsharded(day), 0, `${sha('old label').slice(0, 16)}\nd-old.pdf`);
    await redis.zadd(keys.journeyFilesUnsharded(day), 0, 'old-events.csv\nd-old-e');

    expect((await findBySha256(redis, keys, sha('old label').slice(0, 8), 30, now)).map((s) => s.delivery_id)).toEqual(['d-old']);
    expect((await findByFile(redis, keys, ['old-events.csv'], 30, now)).map((s) => s.delivery_id)).toEqual(['d-old-e']);
  });
});
