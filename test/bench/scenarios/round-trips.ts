/**
 * round-trips (issue 46): what one item costs in Redis on the happy path, counted from Redis' side
 * with MONITOR (support/monitor.ts), against the budget: ≤ 6 round trips (top-level commands,
 * BullMQ's own included) and ≤ 60 commands (scripts' inner calls included) for a label, a CT-e and
 * an event accepted at the first attempt.
 * A daemon (watcher + worker, the delivery thread on: the defaults), limits lifted on both sides
 * and a sandbox that answers at once, on a private redis-server of its own. Three phases, each
 * settled before the next: 200 labels, then 200 CT-e (each of a known delivery), then one NDJSON
 * file of 200 events (one a delivery). A phase's window runs from its drop to the last command
 * that is not background (a command shape the daemon also sent while idle, before the first drop:
 * polls, leases, health checks); everything in it counts, background too, divided by the items.
 * Also reported: a per-command and per-script profile (the evidence for what to fold next), the
 * background's rate, how the commands group into runs of one connection (≈ its writes), and what a
 * retry and a 429 add: a fourth phase of 200 labels with 30 % of the requests answered 503, a fifth
 * dropped into a 1 s storm of 429s.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { startSandbox } from '../../../src/sandbox/server.js';
import { spawnDaemon } from '../support/daemon.js';
import { cnpj, cteXml, dropAll, labelPdf, ndjson, pastInstant, stageFiles } from '../support/inputs.js';
import { perItem, recordMonitor, scriptNames, tally, type MonitorLine, type Tally } from '../support/monitor.js';
import { startPrivateRedis, benchPrefix } from '../support/redis.js';
import type { Figure, Scenario } from '../support/report.js';
import { listFiles } from '../support/tally.js';
import { round, sleep, waitFor } from '../support/wait.js';
import { setAside } from '../support/work-folder.js';

const UNLIMITED = 1_000_000_000;
/** Issue 46: a label, a CT-e or an event accepted at the first attempt. */
export const ROUND_TRIP_BUDGET = { roundTrips: 6, commands: 60 } as const;
const ITEMS = 200;
/** The share of requests answered 503 in the retry phase. */
const RETRY_ERROR_RATE = 0.3;
/** How long the idle daemon is watched before the first drop, to learn its background commands. */
const IDLE_MS = 3000;
/** After a phase settled, how long to keep listening for its trailing writes. */
const TAIL_MS = 1500;

interface Phase {
  name: 'label' | 'CT-e' | 'event' | 'retried label' | 'label in a 429 storm';
  tally: Tally;
  windowMs: number;
  requests: number;
  notAtFirst: number;
}

export const roundTripsScenario: Scenario = {
  name: 'round-trips',
  isComparable: true,
  async run(env) {
    const own = await startPrivateRedis(1024);
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED });
    const carrier = [...sandbox.state.carriers.keys()][0] ?? '';
    const deliveries = Array.from({ length: ITEMS }, () => sandbox.state.addDelivery({}).id);
    const spool = join(env.workDir, 'round-trips-spool');
    const staging = join(env.workDir, 'round-trips-staging');
    const names = await scriptNames();
    // Recording from before the daemon starts: it then sees each script's body once (names the unknown).
    const recorder = await recordMonitor(own.url, names);
    const daemon = await spawnDaemon(
      {
        redisUrl: own.url,
        prefix: benchPrefix('rt'),
        apiUrl: sandbox.url,
        carrierKey: sandbox.keys.carriers[carrier] ?? '',
        spool,
        logFile: join(env.logDir, 'round-trips.log'),
        logFileLevel: 'warn',
        env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
      },
      ['watcher', 'worker'],
    );
    try {
      await daemon.ready;
      const lines = recorder.lines;
      // Start-up's own work (reconcile, first passes) is not an item's.
      await sleep(1500);
      lines.length = 0;
      await sleep(IDLE_MS);
      const idle = lines.splice(0, lines.length);
      const idleSpan = Math.max(IDLE_MS, (idle.at(-1)?.at ?? 0) - (idle[0]?.at ?? 0));
      const background = new Set(idle.filter((l) => l.source !== 'lua').map((l) => l.name));

      const archived = async (dir: string): Promise<number> => (await listFiles(join(spool, 'archive', dir))).filter((f) => !f.endsWith('.json')).length;
      const phases: Phase[] = [];
      const runPhase = async (
        name: Phase['name'],
        inbox: string,
        files: Array<{ name: string; bytes: Buffer | string }>,
        isDone: () => Promise<boolean>,
      ): Promise<void> => {
        const dir = await stageFiles(staging, files);
        sandbox.clearRequests();
        lines.length = 0;
        const started = Date.now();
        await dropAll(
          dir,
          join(spool, inbox),
          files.map((f) => f.name),
        );
        await waitFor(isDone, { timeoutMs: 300_000, what: `${name}s settled`, intervalMs: 50 });
        await sleep(TAIL_MS);
        const seen = lines.splice(0, lines.length);
        // The window ends at the last command that is no background (and its script's inner calls).
        const isBackground = (l: MonitorLine): boolean =>
          l.source === 'lua' ? background.has(`evalsha ${l.script ?? ''}`) || background.has(`eval ${l.script ?? ''}`) : background.has(l.name);
        let end = seen.length;
        while (end > 0 && isBackground(seen[end - 1]!)) end -= 1;
        const window: MonitorLine[] = seen.slice(0, end).filter((l) => l.at >= started - 5);
        const requests = sandbox.requests();
        const firstTry = new Set<string>();
        let notAtFirst = 0;
        for (const r of requests) {
          const id = `${r.endpoint}:${r.deliveryId ?? ''}:${r.path}`;
          if (r.status !== 200 || firstTry.has(id)) notAtFirst += 1;
          firstTry.add(id);
        }
        phases.push({ name, tally: tally(window), windowMs: (window.at(-1)?.at ?? started) - started, requests: requests.length, notAtFirst });
        env.progress(`round-trips: ${name}s settled, ${window.length} lines in ${round(((window.at(-1)?.at ?? started) - started) / 1000, 2)} s`);
      };

      await runPhase(
        'label',
        'labels',
        deliveries.map((id, i) => ({ name: `${id}.pdf`, bytes: labelPdf(`rt ${i}`, 1500) })),
        async () => (await archived('labels')) >= ITEMS,
      );
      await runPhase(
        'CT-e',
        'cte',
        deliveries.map((id, i) => ({ name: `${id}.xml`, bytes: cteXml({ nCT: 46_000 + i, emitCnpj: cnpj(String(112223330000 + i)) }) })),
        async () => (await archived('cte')) >= ITEMS,
      );
      await runPhase(
        'event',
        'events',
        [
          {
            name: `rt-events-${randomUUID().slice(0, 8)}.ndjson`,
            bytes: ndjson(deliveries.map((id, i) => ({ delivery_id: id, event_at: pastInstant(i).toISOString() }))),
          },
        ],
        async () => (await archived('events')) >= 1,
      );
      // What a retry adds: 200 more labels with a third of the requests answered 503 (retried after the backoff).
      const more = Array.from({ length: ITEMS }, () => sandbox.state.addDelivery({}).id);
      sandbox.setFaults({ errorRate: RETRY_ERROR_RATE });
      await runPhase(
        'retried label',
        'labels',
        more.map((id, i) => ({ name: `${id}.pdf`, bytes: labelPdf(`rt retry ${i}`, 1500) })),
        async () => (await archived('labels')) >= 2 * ITEMS,
      );
      sandbox.setFaults({ errorRate: 0 });
      // What a 429 adds: 200 more labels dropped into a 1 s storm of 429s (Retry-After 1 s): the
      // first requests are refused, every process pauses, then all go.
      const stormed = Array.from({ length: ITEMS }, () => sandbox.state.addDelivery({}).id);
      sandbox.setFaults({ rateLimitStormUntil: Date.now() + 1000, stormRetryAfterSec: 1 });
      await runPhase(
        'label in a 429 storm',
        'labels',
        stormed.map((id, i) => ({ name: `${id}.pdf`, bytes: labelPdf(`rt storm ${i}`, 1500) })),
        async () => (await archived('labels')) >= 3 * ITEMS,
      );
      sandbox.setFaults({ rateLimitStormUntil: null });

      const figures: Figure[] = [];
      const notes: string[] = [];
      const details: Record<string, unknown> = {};
      const measures: Record<string, number> = {};
      for (const phase of phases.filter((p) => p.name === 'label' || p.name === 'CT-e' || p.name === 'event')) {
        const t = phase.tally;
        const roundTrips = t.topLevel / ITEMS;
        const commands = (t.topLevel + t.inner) / ITEMS;
        const backgroundHere = [...t.byTopLevel.entries()].filter(([k]) => background.has(k)).reduce((sum, [, v]) => sum + v, 0);
        figures.push(
          {
            metric: `${phase.name}: Redis round trips an item (top-level commands, MONITOR)`,
            value: round(roundTrips, 2),
            unit: '',
            reference: `${t.topLevel} over ${ITEMS} ${phase.name}s in ${round(phase.windowMs / 1000, 2)} s, of which background (polls, lease, health) ${round(backgroundHere / ITEMS, 2)} an item; ${t.connections} connections; ≈ ${round(t.bursts / ITEMS, 2)} writes an item (runs of one connection's commands)`,
            target: `≤ ${ROUND_TRIP_BUDGET.roundTrips} (issue 46)`,
            isMet: roundTrips <= ROUND_TRIP_BUDGET.roundTrips,
          },
          {
            metric: `${phase.name}: Redis commands an item (scripts' inner calls included)`,
            value: round(commands, 1),
            unit: '',
            reference: `${t.topLevel + t.inner} in all, ${t.inner} inside scripts; API requests ${phase.requests}, not at the first attempt ${phase.notAtFirst}`,
            target: `≤ ${ROUND_TRIP_BUDGET.commands} (issue 46)`,
            isMet: commands <= ROUND_TRIP_BUDGET.commands,
          },
        );
        const scripts = new Map([...t.byScript.entries()].map(([k, v]): [string, number] => [k, v.inner + v.calls]));
        notes.push(
          `${phase.name}, top-level an item: ${perItem(t.byTopLevel, ITEMS)}`,
          `${phase.name}, commands an item by script (the call and its inner calls): ${perItem(scripts, ITEMS)}`,
          `${phase.name}, inner calls an item by command: ${perItem(t.byInner, ITEMS)}`,
          ...[...t.byScript.entries()]
            .filter(([, v]) => v.inner >= ITEMS * 5)
            .sort((a, b) => b[1].inner - a[1].inner)
            .map(([name, v]) => `${phase.name}, inside ${name} (${round(v.inner / Math.max(1, v.calls), 1)} a call): ${perItem(v.commands, ITEMS)}`),
        );
        details[phase.name] = {
          topLevel: t.topLevel,
          inner: t.inner,
          bursts: t.bursts,
          connections: t.connections,
          windowMs: phase.windowMs,
          requests: phase.requests,
          notAtFirst: phase.notAtFirst,
          byTopLevel: Object.fromEntries(t.byTopLevel),
          byInner: Object.fromEntries(t.byInner),
          byScript: Object.fromEntries([...t.byScript].map(([k, v]) => [k, { calls: v.calls, inner: v.inner, commands: Object.fromEntries(v.commands) }])),
        };
        measures[`${phase.name} round trips an item`] = roundTrips;
        measures[`${phase.name} commands an item`] = commands;
        if (phase.notAtFirst > 0)
          throw new Error(`${phase.name}s: ${phase.notAtFirst} API requests were not accepted at the first attempt: not the happy path`);
      }
      // What a retry and a 429 add: each phase's cost beyond the happy labels', over its extra requests.
      const happy = phases.find((p) => p.name === 'label');
      const costs = [
        {
          phase: 'retried label',
          what: 'a retry (the API answered 503, the job attempted again)',
          key: 'retry',
          cause: `${round(RETRY_ERROR_RATE * 100, 0)} % of requests answered 503`,
        },
        {
          phase: 'label in a 429 storm',
          what: 'a 429 (every process paused for its Retry-After, then the request again)',
          key: '429',
          cause: 'dropped into a 1 s storm of 429s (Retry-After 1 s)',
        },
      ] as const;
      for (const cost of costs) {
        const phase = phases.find((p) => p.name === cost.phase);
        if (phase === undefined || happy === undefined || phase.requests <= ITEMS) continue;
        const extra = phase.requests - ITEMS;
        const sign = (n: number, digits: number): string => `${n >= 0 ? '+' : '−'}${Math.abs(round(n, digits))}`;
        const labelTopLevel = (phase.tally.topLevel - happy.tally.topLevel) / ITEMS;
        const labelAll = (phase.tally.topLevel + phase.tally.inner - happy.tally.topLevel - happy.tally.inner) / ITEMS;
        const topLevel = (labelTopLevel * ITEMS) / extra;
        const all = (labelAll * ITEMS) / extra;
        figures.push({
          metric: `${cost.what}: what it adds to a label`,
          value: `${sign(labelTopLevel, 1)} / ${sign(labelAll, 0)}`,
          unit: 'round trips / commands a label',
          reference: `${ITEMS} labels ${cost.cause}: ${phase.requests} requests (${extra} beyond one a label; each ${sign(topLevel, 1)} round trips, ${sign(all, 0)} commands), ${round(phase.tally.topLevel / ITEMS, 1)} round trips and ${round((phase.tally.topLevel + phase.tally.inner) / ITEMS, 0)} commands a label against the happy phase's ${round(happy.tally.topLevel / ITEMS, 1)} and ${round((happy.tally.topLevel + happy.tally.inner) / ITEMS, 0)}, in ${round(phase.windowMs / 1000, 1)} s (the waits, and the background in them, included)`,
        });
        notes.push(`${cost.phase}, top-level an item: ${perItem(phase.tally.byTopLevel, ITEMS)}`);
        measures[`${cost.key}: round trips it adds a label`] = labelTopLevel;
        measures[`${cost.key}: commands it adds a label`] = labelAll;
        details[cost.phase] = { topLevel: phase.tally.topLevel, inner: phase.tally.inner, requests: phase.requests, windowMs: phase.windowMs };
      }
      const idleTally = tally(idle);
      notes.push(
        `background while idle (${round(idleSpan / 1000, 1)} s before the first drop): ${round(((idleTally.topLevel + idleTally.inner) * 1000) / idleSpan, 1)} commands/s, ${round((idleTally.topLevel * 1000) / idleSpan, 1)} top-level/s: ${perItem(idleTally.byTopLevel, idleSpan / 1000, 0.01)}`,
        `private redis-server; daemon watcher+worker (delivery thread on), limits lifted, the sandbox answers at once; each phase settled (every file under archive/) before the next`,
      );
      details['idle'] = { spanMs: idleSpan, byTopLevel: Object.fromEntries(idleTally.byTopLevel), inner: idleTally.inner };
      return { figures, notes, details, measures };
    } finally {
      await recorder.stop();
      await daemon.stop();
      await sandbox.close();
      await own.stop();
      await setAside(env, spool, staging);
    }
  },
};
