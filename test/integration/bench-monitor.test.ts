/**
 * The round-trip bench's counting (test/bench/support/monitor.ts) on a real Redis: MONITOR's lines
 * of one connection make the tally the issue-46 figures rest on — each top-level command once
 * (a pipeline's too), each `redis.call` of a script as an inner command of that script, and a
 * script named by the SHA-1 of its body whether it went as EVAL (its body, escaped by MONITOR:
 * quotes, backslashes, newlines, non-ASCII bytes) or as EVALSHA.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineScript } from '../../src/store/script.js';
import { recordMonitor, scriptNames, tally, type MonitorLine } from '../bench/support/monitor.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('mon');
// A redis-server of its own: MONITOR on the shared test Redis saw every other test file's traffic,
// and ioredis' monitor mode broke on it ("Command queue state error", a clean-clone suite run).
let own: OwnRedis;
let redis: Redis;
beforeAll(async () => {
  own = await startOwnRedis();
  redis = new Redis(own.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis.disconnect();
  await own.close();
});

const PROBE = defineScript(
  'benchMonitorProbe',
  `-- a probe: "quoted", a backslash \\\\ and é
redis.call('SET', KEYS[1], ARGV[1])
return redis.call('GET', KEYS[1])
`,
);

it('counts one connection’s top-level commands and its scripts’ inner calls, and names the script by its body', async () => {
  const names = await scriptNames();
  expect([...names.values()]).toEqual(expect.arrayContaining(['bullmq moveToFinished', 'bullmq addStandardJob', 'gateEnterDocument', 'benchMonitorProbe']));
  const recorder = await recordMonitor(own.url, names);
  try {
    await redis.get(`${prefix}:a`);
    // The port MONITOR names this connection by.
    const source = `127.0.0.1:${redis.stream.localPort ?? 0}`;
    await PROBE(redis, [`${prefix}:p`], ['one']); // first call on this socket: EVAL with the body
    await PROBE(redis, [`${prefix}:p`], ['two']); // then EVALSHA
    await redis.pipeline().set(`${prefix}:b`, '1').incr(`${prefix}:c`).exec();
    const marker = `${prefix}:done`;
    await redis.echo(marker);
    await waitFor(() => recorder.lines.some((l) => l.source === source && l.name === 'echo'), { timeoutMs: 5000, what: 'the marker in MONITOR' });
    // Only this connection's lines (other test files share the Redis), and the lua lines right after its scripts.
    const mine: MonitorLine[] = [];
    let isMine = false;
    for (const line of recorder.lines) {
      if (line.source !== 'lua') isMine = line.source === source;
      if (isMine) mine.push(line);
    }
    const t = tally(mine);
    expect(Object.fromEntries(t.byTopLevel)).toEqual({
      get: 1,
      'eval benchMonitorProbe': 1,
      'evalsha benchMonitorProbe': 1,
      set: 1,
      incr: 1,
      echo: 1,
    });
    expect(t.topLevel).toBe(6);
    expect(t.inner).toBe(4);
    expect(Object.fromEntries(t.byInner)).toEqual({ set: 2, get: 2 });
    const probe = t.byScript.get('benchMonitorProbe');
    expect(probe?.calls).toBe(2);
    expect(probe?.inner).toBe(4);
    expect(t.connections).toBe(1);
  } finally {
    await recorder.stop();
  }
});
