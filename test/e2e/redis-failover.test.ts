/**
 * A failover of production-shaped Redis under load (issue 28 item 6): two daemon processes push
 * labels and two events per delivery through a sandbox API that answers slowly; the replica is
 * made to lag (DEBUG SLEEP) and the primary is killed -9. Asserted, from the sandbox's own log and
 * the spool: nothing lost, nothing accepted twice, a delivery's events in order, work flowing again
 * within 10 s of the promotion without a restart, at most one warn line per process about Redis,
 * and no error-level line.
 *
 * One seed of each topology runs in CI (FAILOVER_SEED, default 1); `npm run test:failover` sweeps
 * more (FAILOVER_SEEDS; FAILOVER_TOPOLOGIES=sentinel,cluster chooses; test/tools/failover-sweep.mjs
 * runs them under load and tallies the failures by kind). The seed picks how much is answered
 * before the kill and how long the replica lags.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxRequest } from '../../src/sandbox/server.js';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess, type LogLine } from '../support/process.js';
import { adminOf, startClusterSet, startSentinelSet, type ClusterSet, type SentinelSet } from '../support/redis-topologies.js';
import { waitFor } from '../support/wait.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { openContext } from '../../src/runtime/context.js';

const DELIVERIES = 60;
const SEEDS = (process.env['FAILOVER_SEEDS'] ?? process.env['FAILOVER_SEED'] ?? '1').split(',').map(Number);
const TOPOLOGIES = (process.env['FAILOVER_TOPOLOGIES'] ?? 'sentinel,cluster')
  .split(',')
  .filter((kind): kind is 'sentinel' | 'cluster' => kind === 'sentinel' || kind === 'cluster');
/** The events files dropped: each carries both events of its share of the deliveries (two batches in flight). */
const EVENTS_FILES = 2;

let opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await killAllDaemons();
  // Each close bounded, so one that hangs is named instead of timing the hook out.
  for (const resource of opened.reverse()) {
    const bound = new Promise<string>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
    const outcome = await Promise.race([resource.close().then(() => 'closed'), bound]);
    if (outcome === 'hung') console.warn(`closing ${resource.constructor.name} ${Object.keys(resource).join(',')} took over 20 s`);
  }
  opened = [];
}, 90_000);

/** mulberry32: a small seeded generator, so a failing seed can be run again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Failover {
  /** The data node serving the deployment now, its lagging replica. */
  nodes(): Promise<{ primary: number; replica: number }>;
  promoted(oldPrimary: number): Promise<boolean>;
  kill(port: number): Promise<void>;
  admin(port: number): ReturnType<typeof adminOf>;
}

async function sentinelFailover(): Promise<{ env: Record<string, string>; failover: Failover }> {
  const set: SentinelSet = await startSentinelSet();
  opened.push(set);
  return {
    env: { CARRIER_SYNC_REDIS_SENTINELS: set.sentinels, REDIS_URL: set.url },
    failover: {
      nodes: async () => ({ primary: await set.currentPrimaryPort(), replica: set.replicaPort }),
      promoted: async (old) => (await set.currentPrimaryPort()) !== old,
      kill: (port) => set.kill(port),
      admin: (port) => adminOf(set, port),
    },
  };
}

async function clusterFailover(prefix: string): Promise<{ env: Record<string, string>; failover: Failover }> {
  const set: ClusterSet = await startClusterSet();
  opened.push(set);
  return {
    env: { REDIS_URL: set.url, CARRIER_SYNC_REDIS_CLUSTER: 'true' },
    failover: {
      nodes: async () => {
        const { master, replicas } = await set.nodesOf(prefix);
        return { primary: master, replica: replicas[0]! };
      },
      promoted: async (old) => (await set.nodesOf(prefix)).master !== old,
      kill: (port) => set.kill(port),
      admin: (port) => adminOf(set, port),
    },
  };
}

describe.each(SEEDS)('seed %i', (seed) => {
  it.each(TOPOLOGIES)(
    '%s: a failover with a lagging replica under load loses nothing, sends nothing twice, keeps order, resumes within 10 s',
    { timeout: 120_000 },
    async (kind) => {
      const next = random(seed * 7919 + (kind === 'cluster' ? 1 : 0));
      const env: E2eEnv = await createE2eEnv({
        sandbox: { autoCreateDeliveries: true, ratePerMinute: 100_000, faults: { latencyMs: 300, latencyJitterMs: 200 } },
      });
      opened.push(env);
      const prefix = `{${env.prefix}}`;
      const topology = kind === 'sentinel' ? await sentinelFailover() : await clusterFailover(prefix);
      const daemonEnv = { ...env.env, ...topology.env, CARRIER_SYNC_PREFIX: prefix, CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: '100000' };
      const daemons: DaemonProcess[] = [spawnDaemon(daemonEnv, { args: env.args('start') }), spawnDaemon(daemonEnv, { args: env.args('start') })];
      await Promise.all(daemons.map((daemon) => waitUntilStarted(daemon, 30_000)));

      // The load: a label and two events for each delivery, dropped at once; the events in two files
      // (each with both events of half the deliveries, so each delivery's order is one file's).
      const ids = Array.from({ length: DELIVERIES }, () => randomUUID());
      const base = Date.now() - 3_600_000;
      const events = ids.flatMap((id, i) => [0, 1].map((n) => ({ delivery_id: id, event_at: new Date(base + i * 10_000 + n * 1000).toISOString() })));
      await Promise.all(ids.map(async (id) => dropFile(join(env.spool, 'labels'), `${id}.pdf`, await makePdf(id))));
      for (let file = 0; file < EVENTS_FILES; file += 1) {
        const mine = events.filter((_, i) => Math.floor(i / 2) % EVENTS_FILES === file);
        await dropFile(join(env.spool, 'events'), `load-${file + 1}.ndjson`, `${mine.map((e) => JSON.stringify(e)).join('\n')}\n`);
      }

      // Kill somewhere in the first half of the work, with the replica lagging 0.5 to 2 s.
      const answeredBeforeKill = 20 + Math.floor(next() * 60);
      const lagSec = Math.round((0.5 + next() * 1.5) * 10) / 10;
      await waitFor(() => env.sandbox.requests().length >= answeredBeforeKill, { timeoutMs: 60_000, what: `${answeredBeforeKill} answers before the kill` });
      const { primary, replica } = await topology.failover.nodes();
      const lagging = topology.failover.admin(replica);
      const probe = topology.failover.admin(replica);
      void lagging.call('DEBUG', 'SLEEP', String(lagSec)).catch(() => undefined);
      // The replica is asleep once a PING to it goes unanswered for 200 ms.
      await waitFor(
        async () => (await Promise.race([probe.ping().then(() => false), new Promise((resolve) => setTimeout(() => resolve(true), 200))])) === true,
        {
          what: 'the replica lagging',
        },
      );
      const logStart = daemons.map((daemon) => daemon.stderrLines.length);
      await topology.failover.kill(primary);
      const killedAt = Date.now();
      await waitFor(() => topology.failover.promoted(primary), { timeoutMs: 30_000, intervalMs: 100, what: 'a replica promoted' });
      const promotedAt = Date.now();
      lagging.disconnect();
      probe.disconnect();

      // Work resumes without a restart: a request the API received after the promotion.
      const resumed = await waitFor(() => env.sandbox.requests().find((r) => r.at > promotedAt), {
        timeoutMs: 30_000,
        what: 'a request after the promotion',
      }).catch((error: Error) => {
        throw new Error(`${error.message}\n--- daemon 1\n${daemons[0]!.tail(15)}\n--- daemon 2\n${daemons[1]!.tail(15)}`);
      });
      const resumeMs = resumed.at - promotedAt;
      // Every file settled: nothing left in an inbox or in .inflight/ (archived, or failed with its reason).
      const isSettled = (path: string): boolean => path.startsWith('archive/') || path.startsWith('failed/') || !/^(labels|cte|events|\.inflight)\//.test(path);
      await waitFor(async () => (await listFiles(env.spool)).every(isSettled), {
        timeoutMs: 60_000,
        what: 'every file archived (nothing left in an inbox or .inflight/)',
      }).catch(async (error: Error) => {
        const left = (await listFiles(env.spool)).filter((path) => !isSettled(path));
        const stuck = await stuckBatchJobs(daemonEnv, left);
        const jobIds = stuck.filter((entry) => !entry.startsWith('batch ')).map((entry) => entry.split(' ')[0]!);
        // A document left in flight, or an event of a batch not done: its delivery's lines in both daemons, and its history.
        const eventDeliveries = jobIds.map((jobId) => jobId.split('.')[1]!);
        const documentDeliveries = left
          .filter((path) => /^\.inflight\/(labels|cte)\//.test(path))
          .map((path) => path.split('~')[1]!.replace(/\.(pdf|xml)$/, ''));
        const histories = await Promise.all(
          [...new Set([...documentDeliveries, ...eventDeliveries])].map(async (deliveryId) => {
            const history = await runCli(env.args('history', deliveryId), { env: daemonEnv, timeoutMs: 30_000 });
            // What the API saw of it, timed from the kill.
            const seen = env.sandbox
              .requests()
              .filter((r) => r.deliveryId === deliveryId)
              .map((r) => `${r.endpoint} ${r.eventAt ?? ''} at ${r.at - killedAt} ms from the kill (promotion at ${promotedAt - killedAt}), HTTP ${r.status}`);
            const jobs = documentDeliveries.includes(deliveryId) ? await documentJobStates(daemonEnv, deliveryId) : [];
            return `--- history of ${deliveryId}\n${history.stdout}${history.stderr}--- its requests\n${seen.join('\n')}\n--- its label and CT-e jobs\n${jobs.join('\n')}`;
          }),
        );
        const about = (line: LogLine): boolean =>
          (line.level ?? 0) >= 40 || [...jobIds, ...documentDeliveries, ...eventDeliveries].some((id) => JSON.stringify(line).includes(id));
        const lines = daemons.map((daemon, i) =>
          daemon
            .logs()
            .filter(about)
            .map((line) => `${i + 1} ${JSON.stringify(line)}`),
        );
        throw new Error(
          `${error.message}\nnot archived: ${left.join(', ')}\nbatch jobs not done: ${stuck.join('; ')}\n${histories.join('\n')}\n--- their lines and the warnings\n${lines.flat().join('\n')}\n--- daemon 1\n${daemons[0]!.tail(20)}\n--- daemon 2\n${daemons[1]!.tail(20)}`,
        );
      });
      console.log(
        `${kind} seed ${seed}: killed after ${answeredBeforeKill} answers, replica lag ${lagSec} s, promotion ${promotedAt - killedAt} ms after the kill, first request ${resumeMs} ms after it`,
      );

      // Every file archived; one in failed/ is a finding, named with its reason (its .error.json).
      const failed = (await listFiles(join(env.spool, 'failed'))).filter((path) => !path.endsWith('.error.json'));
      const reasons = await Promise.all(
        failed.map(async (path) => {
          const report = await readFile(join(env.spool, 'failed', `${path}.error.json`), 'utf8').catch(() => null);
          if (report === null) return `${path} (no .error.json)`;
          const { code, message } = JSON.parse(report) as { code?: string; message?: string };
          return `${path} ${code ?? ''} ${String(message ?? '').slice(0, 120)}`;
        }),
      );
      expect(reasons, 'files sent to failed/').toEqual([]);
      expect((await listFiles(join(env.spool, 'archive'))).length, 'files archived').toBe(DELIVERIES + EVENTS_FILES);

      const requests = env.sandbox.requests();
      const accepted = (r: SandboxRequest) => r.status === 200;
      const count = (keys: string[]) => keys.reduce((map, key) => map.set(key, (map.get(key) ?? 0) + 1), new Map<string, number>());
      // Nothing lost: every label and every event on its delivery; the events in order.
      for (const id of ids) expect(env.sandbox.state.deliveries.get(id)?.label, `label of ${id}`).toBeTruthy();
      for (const id of ids) {
        const recorded = (env.sandbox.state.deliveries.get(id)?.events ?? []).map((e) => Date.parse(e.event_at));
        expect(recorded, `events of ${id}, in order`).toEqual(events.filter((e) => e.delivery_id === id).map((e) => Date.parse(e.event_at)));
      }
      // status names the new primary and the failover the processes saw.
      const status = await runCli(env.args('status', '--json'), { env: daemonEnv, timeoutMs: 30_000 });
      expect(status.code, status.stderr).toBe(0);
      const { topology: seen } = JSON.parse(status.stdout) as {
        topology: { kind: string; primary: string; lastFailover: { at: string; from: string } | null };
      };
      const shownTopology = JSON.stringify(seen);
      expect(seen.kind).toBe(kind);
      expect(seen.primary, shownTopology).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(seen.primary, shownTopology).not.toBe(`127.0.0.1:${primary}`);
      expect(seen.lastFailover?.from, shownTopology).toBe(`127.0.0.1:${primary}`);
      expect(Date.parse(seen.lastFailover?.at ?? '')).toBeGreaterThanOrEqual(killedAt - 1000);

      expect(resumeMs, 'work flows again within 10 s of the promotion').toBeLessThan(10_000);
      // Told, not shouted: no error line, at most one warn line about Redis per process; both still run.
      // (Soft: every finding of a run is reported together.)
      const findings: string[] = [];
      for (const [index, daemon] of daemons.entries()) {
        expect(daemon.isRunning()).toBe(true);
        const lines = daemon.stderrLines.slice(logStart[index]).flatMap((raw) => {
          try {
            return [JSON.parse(raw) as LogLine];
          } catch {
            return [{ msg: raw, level: 50 } as LogLine];
          }
        });
        const said = (line: LogLine) => `${line.msg} (${String((line['err'] as { message?: string } | undefined)?.message ?? '').slice(0, 80)})`;
        const errors = lines.filter((line) => (line.level ?? 0) >= 50).map(said);
        const warns = lines.filter((line) => line.level === 40 && /redis|failover|primary/i.test(`${line.msg} ${String(line['mod'])}`)).map(said);
        findings.push(`process ${index + 1}: ${errors.length} error lines, ${warns.length} warn lines about Redis (${warns.join(' | ')})`);
        expect.soft(errors, `process ${index + 1}: error lines`).toEqual([]);
        expect.soft(warns.length, `process ${index + 1}: warn lines about Redis: ${warns.join(' | ')}`).toBeLessThanOrEqual(1);
      }
      // Nothing accepted twice: one accepted label request per delivery, one collecting call per event.
      const twice = [
        ...[...count(requests.filter((r) => (r.endpoint === 'label' || r.endpoint === 'cte') && accepted(r)).map((r) => `${r.endpoint} ${r.deliveryId}`))],
        ...[...count(requests.filter((r) => r.endpoint === 'collecting').map((r) => `event ${r.deliveryId} ${Date.parse(r.eventAt ?? '')}`))],
      ].filter(([, n]) => n > 1);
      // How each accepted item's answer was found written (the `item sent` line's answerWrite): before
      // the kill every one should be on a replica; 'primary' there is an answer a failover could lose.
      const answerWrites = count(
        daemons.flatMap((daemon) =>
          daemon
            .logs()
            .filter((line) => line.msg === 'item sent')
            .map((line) => `${String(line['answerWrite'])}${Number(line['time']) < killedAt ? ' before the kill' : ''}`),
        ),
      );
      // What the failover cost the API's limit: requests beyond one an item (a 5xx of the sandbox's
      // faults, a request sent again because its answer was lost with the primary).
      const itemRequests = requests.filter((r) => r.endpoint === 'label' || r.endpoint === 'cte' || r.endpoint === 'collecting');
      const items = new Set(itemRequests.map((r) => `${r.endpoint} ${r.deliveryId} ${r.eventAt ?? ''}`)).size;
      const beyond = itemRequests.length - items;
      console.log(
        `${kind} seed ${seed}: ${findings.join('; ')}; ${twice.length} items accepted twice; answers written: ${[...answerWrites].map(([how, n]) => `${how} ${n}`).join(', ')}; requests ${itemRequests.length} for ${items} items (${beyond} beyond one an item, ${itemRequests.filter((r) => r.at >= killedAt).length} after the kill)`,
      );
      // The hazard itself, even in a run that passes: an answer written before the kill with no
      // replica's acknowledgement, on a deployment that had one (a kill then loses it, and the item
      // goes out again). Seen in 5 Cluster runs of 30 before the view asked the slot's master.
      const unacknowledged = [...answerWrites].filter(([how]) => how.endsWith('primary before the kill'));
      expect.soft(unacknowledged, 'answers written before the kill without the replica').toEqual([]);
      // A finding to explain, not only to count: each item sent twice with its requests (times from
      // the kill), what the daemons logged about its delivery, and its journey as `history` tells it.
      for (const [key] of twice) {
        const deliveryId = key.split(' ')[1]!;
        const itsRequests = requests
          .filter((r) => r.deliveryId === deliveryId)
          .map(
            (r) =>
              `${r.endpoint} ${r.eventAt ?? ''} at ${r.at - killedAt} ms from the kill (promotion at ${promotedAt - killedAt}), ${r.durationMs} ms, HTTP ${r.status}${r.isRepeat === true ? ' (repeat)' : ''}`,
          );
        const itsLines = daemons.flatMap((daemon, i) =>
          daemon
            .logs()
            .filter((line) => JSON.stringify(line).includes(deliveryId))
            .map((line) => `${i + 1} ${JSON.stringify(line)}`),
        );
        const history = await runCli(env.args('history', deliveryId), { env: daemonEnv, timeoutMs: 30_000 });
        console.log(
          `${kind} seed ${seed}: sent twice: ${key}\n${itsRequests.join('\n')}\n--- its lines\n${itsLines.join('\n')}\n--- history\n${history.stdout}${history.stderr}`,
        );
      }
      expect
        .soft(
          twice.map(([key]) => key),
          'accepted twice',
        )
        .toEqual([]);
    },
  );
});

/** The jobs of the in-flight events files' batches that have no done mark, with their BullMQ state (a failure's diagnostic). */
async function stuckBatchJobs(env: Record<string, string>, left: string[]): Promise<string[]> {
  const claims = left.filter((path) => path.startsWith('.inflight/events/')).map((path) => path.slice('.inflight/events/'.length).split('~')[0]!);
  if (claims.length === 0) return [];
  const ctx = await openContext(loadConfig({ env }), createLogger({ level: 'silent' }), 'diagnostic');
  try {
    const out: string[] = [];
    for (const batchId of claims) {
      const missing = await ctx.redis.sdiff(ctx.keys.batchJobs(batchId), ctx.keys.batchDone(batchId));
      out.push(`batch ${batchId}: ${await ctx.redis.scard(ctx.keys.batchJobs(batchId))} jobs, ${await ctx.redis.scard(ctx.keys.batchDone(batchId))} done`);
      for (const jobId of missing) {
        const queue = ctx.queues.items.collecting;
        const job = await queue.getJob(jobId);
        const lock = await ctx.redis.get(`${queue.toKey(jobId)}:lock`);
        const ttl = await ctx.redis.pttl(`${queue.toKey(jobId)}:lock`);
        out.push(
          `${jobId} ${await queue.getJobState(jobId)} (lock ${lock === null ? 'none' : `held, ${ttl} ms left`}; attempts started ${job?.attemptsStarted ?? '?'}, made ${job?.attemptsMade ?? '?'}, processedOn ${job?.processedOn ?? '-'}, delay ${job?.delay ?? '-'})`,
        );
      }
    }
    return out;
  } catch (error) {
    return [`(could not read: ${String(error)})`];
  } finally {
    await ctx.closers.closeAll();
  }
}

/** A delivery's label and CT-e jobs as Redis holds them now: state, lock, attempts (a failure's diagnostic). */
async function documentJobStates(env: Record<string, string>, deliveryId: string): Promise<string[]> {
  const ctx = await openContext(loadConfig({ env }), createLogger({ level: 'silent' }), 'diagnostic');
  try {
    const out: string[] = [];
    for (const kind of ['label', 'cte'] as const) {
      const queue = ctx.queues.items[kind];
      const jobs = (await queue.getJobs(['active', 'waiting', 'delayed', 'failed', 'completed', 'prioritized'])).filter(
        (job) => job?.data.deliveryId === deliveryId,
      );
      for (const job of jobs) {
        const jobId = String(job.id);
        const lock = await ctx.redis.get(`${queue.toKey(jobId)}:lock`);
        out.push(
          `${jobId} ${await queue.getJobState(jobId)} (lock ${lock === null ? 'none' : `held, ${await ctx.redis.pttl(`${queue.toKey(jobId)}:lock`)} ms left`}; attempts started ${job.attemptsStarted}, made ${job.attemptsMade}, processedOn ${job.processedOn ?? '-'}, delay ${job.delay}, timestamp ${job.timestamp})`,
        );
      }
      if (jobs.length === 0) out.push(`no ${kind} job of ${deliveryId}`);
    }
    return out;
  } catch (error) {
    return [`(could not read: ${String(error)})`];
  } finally {
    await ctx.closers.closeAll();
  }
}
