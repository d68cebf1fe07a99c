/**
 * Every log line of a whole daemon run is one JSON object that names each key once: log stores
 * (Loki, Elasticsearch) and jq keep one of two equal keys and drop the other. The run takes the
 * trial defaults (managed redis-server, embedded sandbox) so that their lines are in it too, gets
 * files of every kind (good and bad) and one POST /events, and stops on SIGINT.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { makeCteXml, makePdf } from '../support/builders.js';
import { dropFile, listFiles } from '../support/e2e-env.js';
import { repeatedKeysOf } from '../support/json-keys.js';
import { endRedisServers, managedDirOf, managedRedisPidIn } from '../support/managed-redis.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { waitFor } from '../support/wait.js';

let dir: string | undefined;
const redisPids = new Set<number>();

afterAll(async () => {
  await killAllDaemons();
  await endRedisServers(redisPids);
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

it('no log line of a daemon run (managed Redis, embedded sandbox, files, ingest, SIGINT) repeats a key', async () => {
  dir = await mkdtemp(join(tmpdir(), 'cs-loglines-'));
  const spool = join(dir, 'spool');
  const daemon = spawnDaemon({ CARRIER_SYNC_HTTP_PORT: '0', CARRIER_SYNC_WRITE_STABLE_MS: '100', LOG_LEVEL: 'debug' }, { cwd: dir });
  await waitUntilStarted(daemon, 30_000);
  const redisPid = await managedRedisPidIn(managedDirOf(dir));
  expect(redisPid).not.toBeNull();
  redisPids.add(redisPid!);

  const [label, cte, badLabel] = [randomUUID(), randomUUID(), randomUUID()];
  await dropFile(join(spool, 'labels'), `${label}.pdf`, await makePdf('label'));
  await dropFile(join(spool, 'cte'), `${cte}.xml`, makeCteXml());
  await dropFile(join(spool, 'labels'), `${badLabel}.pdf`, 'not a pdf');
  await dropFile(
    join(spool, 'events'),
    'events-one-good-one-bad.ndjson',
    `${JSON.stringify({ delivery_id: randomUUID(), event_at: '2026-03-01T10:00:00Z' })}\n{"delivery_id":"x","event_at":"nope"}\n`,
  );
  const started = daemon.logs().find((line) => line.msg === 'carrier-sync started');
  const ingest = await fetch(`${String(started?.['opsUrl'])}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ delivery_id: randomUUID(), event_at: '2026-03-01T11:00:00Z' }]),
  });
  expect(ingest.status).toBe(202);
  await waitFor(
    async () => {
      const archived = await listFiles(join(spool, 'archive'));
      const failed = await listFiles(join(spool, 'failed'));
      return (
        archived.some((path) => path.endsWith(`${label}.pdf`)) &&
        archived.some((path) => path.endsWith(`${cte}.xml`)) &&
        failed.some((path) => path.endsWith(`${badLabel}.pdf`)) &&
        failed.some((path) => path.includes('events-one-good-one-bad'))
      );
    },
    { timeoutMs: 30_000, what: 'the label and CT-e archived, the bad label and the events report in failed/' },
  );

  daemon.kill('SIGINT');
  expect(await daemon.exited, daemon.tail()).toEqual({ code: 0, signal: null });

  const lines = [...daemon.stderrLines, ...daemon.stdoutLines].filter((line) => line.trim() !== '');
  const messages = daemon.logs().map((line) => line.msg);
  // The run produced the lines this test is about.
  expect(messages).toEqual(
    expect.arrayContaining([
      'started a managed redis-server (REDIS_URL is not set)',
      "sandbox API ready; each carrier's and seller group's key is its `key` in the seed file",
      'carrier-sync started',
      'events ingested',
      'shut down cleanly',
    ]),
  );
  expect(daemon.logs().some((line) => line['mod'] === 'sandbox')).toBe(true);
  // The sandbox's ready line names ids as ids (a person read `carrierKeys: [<id>]` and sent an id as the key) and the seed holding the keys.
  const ready = daemon.logs().find((line) => String(line.msg).startsWith('sandbox API ready'));
  expect(ready).toMatchObject({
    carrierIds: expect.arrayContaining(['ca000000-0000-4000-8000-000000000001']),
    seedFile: expect.stringMatching(/config\/sandbox-seed\.json$/),
  });
  expect(Object.keys(ready ?? {}).filter((key) => /key/i.test(key))).toEqual([]);
  expect(lines.length).toBeGreaterThan(20);
  const problems = lines.flatMap((line) => {
    try {
      return repeatedKeysOf(line).map((repeated) => `${repeated} in ${line}`);
    } catch (error) {
      return [`not JSON (${(error as Error).message}): ${line}`];
    }
  });
  expect(problems).toEqual([]);
});
