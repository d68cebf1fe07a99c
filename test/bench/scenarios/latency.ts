/**
 * latency: one label at a time appears in the inbox of an idle daemon (watcher + worker in one
 * process, writeStableMs 100, limits lifted); measured from the rename into the inbox until the
 * sandbox receives the request, minus the write-stable window. Reference in the same run: the same
 * label sent straight to the sandbox with undici (the floor of the "send" step).
 */
import { randomUUID } from 'node:crypto';
import { rename, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startSandbox } from '../../../src/sandbox/server.js';
import { spawnDaemon } from '../support/daemon.js';
import { labelPdf } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { percentile, round, sleep, waitFor } from '../support/wait.js';
import { setAside } from '../support/work-folder.js';

const UNLIMITED = 1_000_000_000;
const WRITE_STABLE_MS = 100;

export const latencyScenario: Scenario = {
  name: 'latency',
  async run(env) {
    const drops = env.isQuick ? 30 : 200;
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, autoCreateDeliveries: true });
    const carrierKey = Object.values(sandbox.keys.carriers)[0] ?? '';
    const prefix = benchPrefix('latency');
    const spool = join(env.workDir, 'latency-spool');
    const staging = join(env.workDir, 'latency-staging');
    await mkdir(staging, { recursive: true });
    const daemon = await spawnDaemon(
      {
        redisUrl: env.redisUrl,
        prefix,
        apiUrl: sandbox.url,
        carrierKey,
        spool,
        logFile: join(env.logDir, 'latency.log'),
        settings: { spool: { writeStableMs: WRITE_STABLE_MS } },
        env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
      },
      ['watcher', 'worker'],
    );
    try {
      await daemon.ready;
      // Reference: the same kind of request, straight from here.
      const pool = new Pool(sandbox.url, { connections: 1 });
      const direct: number[] = [];
      for (let i = 0; i < Math.min(drops, 50); i += 1) {
        const body = JSON.stringify({ delivery_id: randomUUID(), base64: labelPdf(`direct ${i}`).toString('base64') });
        const started = performance.now();
        const response = await pool.request({
          path: '/v1/delivery/mail-label',
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-carrier-key': carrierKey },
          body,
        });
        await response.body.text();
        direct.push(performance.now() - started);
      }
      await pool.close();

      const beyond: number[] = [];
      for (let i = 0; i < drops + 3; i += 1) {
        const deliveryId = randomUUID();
        const name = `${deliveryId}.pdf`;
        await writeFile(join(staging, name), labelPdf(`latency ${i}`));
        const droppedAt = Date.now();
        await rename(join(staging, name), join(spool, 'labels', name));
        let receivedAt = 0;
        await waitFor(
          () => {
            const hit = sandbox.requests().find((r) => r.endpoint === 'label' && r.deliveryId === deliveryId);
            if (hit !== undefined) receivedAt = hit.at;
            return hit !== undefined;
          },
          { timeoutMs: 10_000, what: `label ${i} at the sandbox`, intervalMs: 1 },
        );
        if (i >= 3) beyond.push(receivedAt - droppedAt - WRITE_STABLE_MS); // the first three warm up the path
        sandbox.clearRequests();
        await sleep(150); // let the outcome move the file: the next drop finds the daemon idle
      }
      const p50 = percentile(beyond, 50);
      return {
        figures: [
          {
            metric: `drop → sandbox, beyond writeStableMs ${WRITE_STABLE_MS} (${drops} drops)`,
            value: `p50 ${round(p50)} / p90 ${round(percentile(beyond, 90))} / p99 ${round(percentile(beyond, 99))} / max ${round(Math.max(...beyond))}`,
            unit: 'ms',
            reference: `direct undici request p50 ${round(percentile(direct, 50), 2)} ms`,
            target: 'p50 ≤ 50 ms',
            isMet: p50 <= 50,
          },
        ],
        notes: [
          `one 2 KB label per drop (renamed into labels/ whole), next drop 150 ms after the sandbox got the previous one; daemon roles watcher+worker in one process; the watcher checks stability every ${Math.min(100, Math.max(10, Math.floor(WRITE_STABLE_MS / 5)))} ms, so up to that much of the figure is the polling step; error log lines ${daemon.errorCount()}`,
        ],
        details: { drops, beyondMs: beyond, directMs: direct },
      };
    } finally {
      await daemon.stop();
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
      await setAside(env, spool, staging);
    }
  },
};
