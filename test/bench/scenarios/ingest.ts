/**
 * ingest: N labels + N CT-e appear at once in the inboxes of a daemon running only the watcher role
 * (no workers: what is measured is the way in, up to "queued"), with MAX_QUEUED above 2N. Figure:
 * files/s from the drop until the queues' backlog reaches 2N, and the daemon's peak RSS. Reference:
 * reading and sha256-hashing the same files in one loop in this process.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { backlogOf } from '../../../src/queue/queues.js';
import { cpuSeconds } from '../support/cpu.js';
import { spawnDaemon } from '../support/daemon.js';
import { cnpj, cteXml, dropAll, labelPdf, stageFiles } from '../support/inputs.js';
import { benchPrefix, callsBetween, cleanupPrefix, commandCalls } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { MB, sampleRss } from '../support/rss.js';
import { round, waitFor } from '../support/wait.js';
import { setAside } from '../support/work-folder.js';

/** Issue 14: ingest at least half as fast as a raw read+sha256 loop over the same files. */
export const INGEST_MIN_RATIO = 0.5;

export const ingestScenario: Scenario = {
  name: 'ingest',
  async run(env) {
    const n = env.isQuick ? 1000 : 10_000;
    const prefix = benchPrefix('ingest');
    const spool = join(env.workDir, 'ingest-spool');
    const labels = Array.from({ length: n }, (_, i) => ({ name: `${randomUUID()}.pdf`, bytes: labelPdf(`ingest label ${i}`, 2048) }));
    const ctes = Array.from({ length: n }, (_, i) => ({
      name: `${randomUUID()}.xml`,
      bytes: Buffer.from(cteXml({ nCT: 1 + i, emitCnpj: cnpj(String(112223330000 + (i % 9999))) })),
    }));
    const labelDir = await stageFiles(join(env.workDir, 'staging'), labels);
    const cteDir = await stageFiles(join(env.workDir, 'staging'), ctes);
    const totalBytes = [...labels, ...ctes].reduce((sum, f) => sum + f.bytes.length, 0);

    // Reference: one loop that reads and hashes every file (page cache warm, as for the daemon).
    const refStarted = performance.now();
    for (const [dir, files] of [
      [labelDir, labels],
      [cteDir, ctes],
    ] as const) {
      for (const file of files)
        createHash('sha256')
          .update(await readFile(join(dir, file.name)))
          .digest('hex');
    }
    const refFilesPerSec = (2 * n * 1000) / (performance.now() - refStarted);

    const daemon = await spawnDaemon(
      {
        redisUrl: env.redisUrl,
        prefix,
        apiUrl: 'http://127.0.0.1:9',
        carrierKey: 'unused-by-the-watcher',
        spool,
        logFile: join(env.logDir, 'ingest.log'),
        env: { CARRIER_SYNC_MAX_QUEUED: String(10 * n) },
      },
      ['watcher'],
    );
    const redis = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
    const queues = [new Queue('label', { connection: redis, prefix }), new Queue('cte', { connection: redis, prefix })];
    try {
      await daemon.ready;
      const rss = sampleRss(daemon.pid, 100);
      const idleRss = (await rss.sampleNow())?.rssBytes ?? 0;
      const callsBefore = await commandCalls(redis);
      const cpuBefore = await cpuSeconds(daemon.pid);
      const started = performance.now();
      await Promise.all([
        dropAll(
          labelDir,
          join(spool, 'labels'),
          labels.map((f) => f.name),
        ),
        dropAll(
          cteDir,
          join(spool, 'cte'),
          ctes.map((f) => f.name),
        ),
      ]);
      const dropMs = performance.now() - started;
      let backlog = 0;
      await waitFor(async () => (backlog = (await Promise.all(queues.map(backlogOf))).reduce((a, b) => a + b, 0)) >= 2 * n, {
        timeoutMs: 600_000,
        what: `${2 * n} jobs queued`,
        intervalMs: 50,
      });
      const elapsedMs = performance.now() - started;
      const cpuUsed = (await cpuSeconds(daemon.pid)) - cpuBefore;
      // Includes the bench's own backlog polls (a few commands every 50 ms), small beside the daemon's.
      const commands = callsBetween(callsBefore, await commandCalls(redis)).filter(([name]) => name !== 'info');
      const totalCommands = commands.reduce((sum, [, calls]) => sum + calls, 0);
      await rss.stop();
      const filesPerSec = (2 * n * 1000) / elapsedMs;
      return {
        figures: [
          {
            metric: `files/s, drop → queued (${(2 * n).toLocaleString('en-US')} files)`,
            value: Math.round(filesPerSec),
            unit: 'files/s',
            reference: `read+sha256 loop: ${Math.round(refFilesPerSec).toLocaleString('en-US')} files/s (ratio ${round(filesPerSec / refFilesPerSec, 3)})`,
            target: `ratio ≥ ${INGEST_MIN_RATIO} (issue 14)`,
            isMet: filesPerSec / refFilesPerSec >= INGEST_MIN_RATIO,
          },
          {
            metric: 'daemon CPU per file (user+sys), drop → queued',
            value: Math.round((cpuUsed * 1e6) / (2 * n)),
            unit: `µs (${round(cpuUsed, 2)} s in all)`,
            reference: `read+sha256 loop: ${Math.round(1e6 / refFilesPerSec)} µs a file (wall, one thread)`,
          },
          { metric: 'daemon peak RSS', value: round(rss.peakBytes() / MB), unit: 'MB', reference: `idle before the drop: ${round(idleRss / MB)} MB` },
        ],
        notes: [
          `${n.toLocaleString('en-US')} labels (2 KB PDF) + ${n.toLocaleString('en-US')} CT-e (${round(ctes[0]!.bytes.length / 1024)} KB), ${round(totalBytes / MB)} MB in all, renamed into the inboxes in ${Math.round(dropMs)} ms; writeStableMs 100; daemon roles: watcher; MAX_QUEUED ${10 * n}`,
          `elapsed ${round(elapsedMs / 1000, 2)} s until the backlog reached ${backlog}; daemon error lines: ${daemon.errorCount()}`,
          `Redis commands per file (INFO commandstats, incl. inside scripts): ${round(totalCommands / (2 * n), 1)}; ${commands
            .slice(0, 8)
            .map(([name, calls]) => `${name} ${round(calls / (2 * n), 2)}`)
            .join(', ')}`,
        ],
        details: { n, cpuUsed, commands, elapsedMs, dropMs, filesPerSec, refFilesPerSec, peakRssBytes: rss.peakBytes(), idleRssBytes: idleRss },
      };
    } finally {
      await daemon.stop();
      await Promise.all(queues.map((q) => q.close()));
      redis.disconnect();
      await cleanupPrefix(env.redisUrl, prefix);
      await setAside(env, spool, labelDir, cteDir);
    }
  },
};
