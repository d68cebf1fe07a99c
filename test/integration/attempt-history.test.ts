/**
 * A dead letter's attempt history (issue 29): each failed attempt's record rides on the gate's
 * leave, in the same script as the answer, for documents and events alike. An item the API keeps
 * answering 404 is tried notFoundAttempts times; its attempt log then holds every attempt, in
 * order, and its report's first and last failure times are the log's first and last.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createAttemptLog } from '../../src/queue/attempts.js';
import { createKeys } from '../../src/store/keys.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const NOT_FOUND_ATTEMPTS = 3;

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

it('records every failed attempt of a label and of an event, in order, and the report names the first and the last', async () => {
  running = await startTestDaemon({ settings: { delivery: { notFoundAttempts: NOT_FOUND_ATTEMPTS, maxAttempts: 5, backoffMs: 20 } } });
  const t = running;
  const [labelDelivery, eventDelivery] = [randomUUID(), randomUUID()];
  await writeFile(join(t.spool, 'labels', `${labelDelivery}.pdf`), await makePdf('for a delivery the API does not know'));
  await writeFile(join(t.spool, 'events', 'unknown.ndjson'), `{"delivery_id":"${eventDelivery}","event_at":"2026-11-22T04:46:26Z"}\n`);
  const reportOf = async (kind: string, name: string): Promise<Record<string, unknown> | null> =>
    (await readdir(join(t.spool, 'failed', kind)).catch((): string[] => [])).includes(`${name}.error.json`)
      ? (JSON.parse(await readFile(join(t.spool, 'failed', kind, `${name}.error.json`), 'utf8')) as Record<string, unknown>)
      : null;
  const [label, events] = await waitFor(
    async () => {
      const found = [await reportOf('labels', `${labelDelivery}.pdf`), await reportOf('events', 'unknown.ndjson')];
      return found.every((report) => report !== null) ? (found as Array<Record<string, unknown>>) : null;
    },
    { what: 'both reports', timeoutMs: 30_000 },
  );
  const event = (events!['deadLettered'] as Array<Record<string, unknown>>)[0]!;

  const redis = connectRedis(testRedisUrl(), 'attempt-history-test');
  try {
    const attempts = createAttemptLog(redis, createKeys(t.prefix));
    for (const report of [label!, event]) {
      expect(report).toMatchObject({ code: 'API_NOT_FOUND', status: 404, attempts: NOT_FOUND_ATTEMPTS });
      const history = await attempts.read(String(report['jobId']));
      expect(history.map((entry) => [entry.attempt, entry.code, entry.status])).toEqual(
        Array.from({ length: NOT_FOUND_ATTEMPTS }, (_, n) => [n + 1, 'API_NOT_FOUND', 404]),
      );
      expect(report['firstFailureAt']).toBe(history[0]!.at);
      expect(report['lastFailureAt']).toBe(history[NOT_FOUND_ATTEMPTS - 1]!.at);
    }
  } finally {
    await closeRedis(redis);
  }
});
