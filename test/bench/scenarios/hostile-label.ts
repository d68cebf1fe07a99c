/**
 * hostile-label (issue 39): one 10 MB label of 300,000 tiny PDF objects (test/support/builders.ts
 * manyObjectsPdf) dropped into a daemon with every role but the scheduler, its API answering at once.
 * Measured from the drop to the file's outcome (archive/ or failed/): how long, the daemon's CPU
 * (every thread of the process), its peak RSS, the event loop's delay (support/loop-delay-probe.ts)
 * and /healthz's answers, asked one after another all along. Then one small label, so that a check
 * thread is up and idle: the daemon's RSS at rest before the drop (no thread started yet) and after
 * that label is what the pool's threads cost. Comparable (`--compare`): only the daemon changes.
 * Targets: refused within its budget (LABEL_TOO_COMPLEX), /healthz within 200 ms throughout.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { startSandbox } from '../../../src/sandbox/server.js';
import { manyObjectsPdf } from '../../support/builders.js';
import { freePort } from '../../support/redis-process.js';
import { cpuSeconds } from '../support/cpu.js';
import { loopDelayProbe, spawnDaemon } from '../support/daemon.js';
import { labelPdf } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { MB, readRss, readRssPeak, sampleRss } from '../support/rss.js';
import { percentile, round, sleep, waitFor } from '../support/wait.js';

export const HOSTILE_LABEL_TARGETS = { healthzMs: 200 } as const;

export const hostileLabelScenario: Scenario = {
  name: 'hostile-label',
  isComparable: true,
  async run(env) {
    const sandbox = await startSandbox({ autoCreateDeliveries: true });
    const prefix = benchPrefix('hostile');
    const port = await freePort();
    const loopDelay = loopDelayProbe(join(env.workDir, 'hostile-loop-delay.json'));
    const daemon = await spawnDaemon(
      {
        redisUrl: env.redisUrl,
        prefix,
        apiUrl: sandbox.url,
        carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
        logFile: join(env.logDir, 'hostile-label.log'),
        env: { CARRIER_SYNC_HTTP_PORT: String(port), ...loopDelay.env },
        nodeArgs: loopDelay.nodeArgs,
      },
      ['watcher', 'worker', 'http'],
    );
    const outcomeOf = async (name: string): Promise<string | null> => {
      for (const dir of ['failed/labels', 'archive/labels']) {
        const found = (await listUnder(join(daemon.spool, dir))).some((f) => f.endsWith(name));
        if (found) return dir.split('/')[0] ?? null;
      }
      return null;
    };
    try {
      await daemon.ready;
      await sleep(3000);
      const restBeforeMb = (await medianRss(daemon.pid)) / MB;
      const bytes = manyObjectsPdf(300_000);
      const name = `${randomUUID()}.pdf`;
      const healthz: number[] = [];
      let isWatching = true;
      const asker = (async () => {
        while (isWatching) {
          const at = performance.now();
          const answer = await request(`http://127.0.0.1:${port}/healthz`);
          await answer.body.dump();
          healthz.push(performance.now() - at);
          await sleep(20);
        }
      })();
      const rss = sampleRss(daemon.pid, 100);
      const cpuBefore = await cpuSeconds(daemon.pid);
      loopDelay.open(daemon.pid);
      const started = performance.now();
      await writeFile(join(daemon.spool, 'labels', `.${name}.part`), bytes);
      await rename(join(daemon.spool, 'labels', `.${name}.part`), join(daemon.spool, 'labels', name));
      let outcome: string | null = null;
      await waitFor(async () => (outcome = await outcomeOf(name)) !== null, { timeoutMs: 120_000, what: 'the hostile label settled', intervalMs: 50 });
      const tookMs = performance.now() - started;
      const cpuUsed = (await cpuSeconds(daemon.pid)) - cpuBefore;
      const delay = await loopDelay.close(daemon.pid);
      isWatching = false;
      await asker;
      await rss.stop();
      const peakMb = Math.max(rss.peakBytes(), (await readRssPeak(daemon.pid)) ?? 0) / MB;
      const report = outcome === 'failed' ? await readReport(join(daemon.spool, 'failed', 'labels', `${name}.error.json`)) : null;
      // One small label: a check thread is now up (and idle), as after any file.
      const small = `${randomUUID()}.pdf`;
      await writeFile(join(daemon.spool, 'labels', small), labelPdf('small', 2048));
      await waitFor(async () => (await outcomeOf(small)) !== null, { timeoutMs: 30_000, what: 'the small label settled', intervalMs: 50 });
      await sleep(3000);
      const restAfterMb = (await medianRss(daemon.pid)) / MB;
      const worstHealthz = Math.max(...healthz);
      return {
        figures: [
          {
            metric: 'hostile label (300,000 objects, 10 MB): outcome',
            value: report === null ? `${outcome ?? 'none'}` : `${report.code}`,
            unit: `in ${round(tookMs / 1000, 2)} s`,
            reference: report?.message ?? '',
            target: 'refused LABEL_TOO_COMPLEX',
            isMet: report?.code === 'LABEL_TOO_COMPLEX',
          },
          { metric: "daemon CPU from the drop to the file's outcome (every thread)", value: round(cpuUsed, 2), unit: 's' },
          {
            metric: '/healthz answers while it is checked: worst (p99)',
            value: Math.round(worstHealthz),
            unit: `ms (p99 ${Math.round(percentile(healthz, 99))} ms over ${healthz.length} answers)`,
            target: `≤ ${HOSTILE_LABEL_TARGETS.healthzMs} ms`,
            isMet: worstHealthz <= HOSTILE_LABEL_TARGETS.healthzMs,
          },
          { metric: "daemon event loop's delay meanwhile: p99 (max)", value: delay.p99Ms, unit: `ms (max ${delay.maxMs} ms)` },
          { metric: 'daemon peak RSS meanwhile', value: Math.round(peakMb), unit: 'MB' },
          {
            metric: 'daemon RSS at rest: before any file / after one more small label (a check thread up, idle)',
            value: `${Math.round(restBeforeMb)} / ${Math.round(restAfterMb)}`,
            unit: 'MB',
          },
        ],
        notes: [`healthz asked one after another, 20 ms apart; RSS at rest = median of 2 s of samples, 3 s after the last step`],
        measures: {
          'time to outcome (s)': tookMs / 1000,
          'daemon CPU (s)': cpuUsed,
          'healthz worst (ms)': worstHealthz,
          'event loop delay p99 (ms)': delay.p99Ms,
          'peak RSS (MB)': peakMb,
          'RSS at rest before (MB)': restBeforeMb,
          'RSS at rest after a small label (MB)': restAfterMb,
        },
        details: { outcome, report, healthzCount: healthz.length, loopDelay: delay },
      };
    } finally {
      await daemon.stop();
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
    }
  },
};

async function listUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true }).catch((): string[] => []);
  return entries.map(String);
}

async function medianRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 8; i += 1) {
    samples.push((await readRss(pid)) ?? 0);
    await sleep(250);
  }
  return percentile(samples, 50);
}

async function readReport(path: string): Promise<{ code: string; message: string }> {
  return JSON.parse(await readFile(path, 'utf8')) as { code: string; message: string };
}
