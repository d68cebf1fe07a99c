/**
 * A Redis outage under load is one warn line when the connection goes and one info line when it is
 * back, per process, not one line per connection and reconnect attempt; the outage is counted in
 * `carrier_sync_redis_outages_total`. The daemon runs every role against a redis-server of the
 * test's own, which is really stopped (SHUTDOWN, the process exits) and started again on the same
 * port and data. CARRIER_SYNC_TEST_OUTAGE_MS sets how long Redis stays away (default 10 s; the
 * issue's figure was taken with 20000).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createE2eEnv, dropFile, type E2eEnv } from '../support/e2e-env.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted, type LogLine } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const OUTAGE_MS = Math.max(5000, Number(process.env['CARRIER_SYNC_TEST_OUTAGE_MS'] ?? 10_000));
const LOST = 'Redis unreachable: waiting for it to come back (one line when it does)';
const BACK = 'Redis reachable again';

let env: E2eEnv | undefined;
let redis: OwnRedis | undefined;

afterAll(async () => {
  await killAllDaemons();
  await redis?.close();
  await env?.close();
});

it(
  `a ${OUTAGE_MS / 1000} s Redis outage under load logs one line when Redis goes and one when it is back, and counts one outage`,
  { timeout: OUTAGE_MS + 90_000 },
  async () => {
    redis = await startOwnRedis();
    env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } });
    // 4 requests a second (the sandbox allows 5) against 1,500 events: the workers are busy for the whole outage.
    const daemon = spawnDaemon({ ...env.env, REDIS_URL: redis.url, CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: '240' }, { args: env.args('start') });
    await waitUntilStarted(daemon);
    const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
    const records = Array.from({ length: 1500 }, (_, index) =>
      JSON.stringify({ delivery_id: randomUUID(), event_at: new Date(Date.UTC(2026, 2, 1, 10, 0, index)).toISOString() }),
    );
    await dropFile(join(env.spool, 'events'), 'load.ndjson', `${records.join('\n')}\n`);
    await waitFor(() => env!.sandbox.requests().length >= 20, { timeoutMs: 30_000, what: 'the workers sending' });

    const before = daemon.stderrLines.length;
    await redis.stop();
    const stoppedAt = Date.now();
    await daemon.waitForLog((line) => line.msg === LOST, { timeoutMs: 15_000, what: 'the outage line' });
    // The outage itself: how long Redis stays away is what the test is about, not a synchronisation.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt))));
    await redis.start();
    const back = await daemon.waitForLog((line) => line.msg === BACK, { timeoutMs: 30_000, what: 'the back line' });
    const sentBefore = env.sandbox.requests().length;
    await waitFor(() => env!.sandbox.requests().length > sentBefore + 10, { timeoutMs: 30_000, what: 'sending again after the outage' });

    // Every line from the stop to the back line (each one JSON: no library prints plain text).
    const parsed = daemon.stderrLines
      .slice(before)
      .map((raw) => JSON.parse(raw) as LogLine)
      .filter((line) => (line.time ?? 0) <= (back.time ?? 0));
    const during = parsed.map((line) => JSON.stringify(line)).join('\n');
    const lost = parsed.filter((line) => line.msg === LOST);
    expect(lost, during).toHaveLength(1);
    expect(lost[0]?.level).toBe(40);
    // The Error is logged whole: its type and stack, not only its message.
    expect((lost[0]?.['err'] as { stack?: string; type?: string } | undefined)?.stack).toMatch(/ECONNREFUSED|Connection is closed|ECONNRESET/);
    expect(parsed.filter((line) => line.msg === BACK)).toHaveLength(1);
    expect(back.level).toBe(30);
    expect(back['outageMs']).toBeGreaterThanOrEqual(OUTAGE_MS - 1000);
    expect(parsed.filter((line) => line['mod'] === 'redis').map((line) => line.msg)).toEqual([LOST, BACK]);
    // Nothing at error level, and no other line carries a connection error: before, each
    // connection's every reconnect attempt was a line (136 JSON lines and 560 lines of plain text
    // in a 20 s outage).
    expect(parsed.filter((line) => (line.level ?? 0) >= 50).map((line) => line.msg)).toEqual([]);
    const aboutConnection = parsed.filter(
      (line) => line.msg !== LOST && /ECONNREFUSED|ECONNRESET|Connection is closed/.test(JSON.stringify(line['err'] ?? '')),
    );
    expect(aboutConnection.map((line) => line.msg)).toEqual([]);
    // What is left: the two lines above, the spool lease's own (lost, and taken again), and the
    // outcomes of the requests in flight when Redis went.
    expect(parsed.filter((line) => line.msg !== 'item sent').length, during).toBeLessThanOrEqual(8);

    const metrics = await (await fetch(`${opsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^carrier_sync_redis_outages_total 1$/m);
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code, daemon.tail()).toBe(0);
  },
);
