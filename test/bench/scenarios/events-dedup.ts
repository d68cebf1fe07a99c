/**
 * events-dedup (acceptance): one NDJSON file of U distinct instants plus D lines that repeat an
 * instant of the same delivery written with another offset and/or precision, shuffled through the
 * file. Expected at the sandbox: exactly U collecting calls, none answered as a repeat
 * (`isRepeat`), and the daemon's duplicates counter (the Redis stats hash behind /metrics) = D.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createKeys } from '../../../src/store/keys.js';
import { createStats } from '../../../src/store/stats.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { parseEventAt } from '../../../src/validate/event-at.js';
import { spawnDaemon } from '../support/daemon.js';
import { ndjson, pastInstant, sameInstantOtherwise, shuffle, type EventLine } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { round, sleep, waitFor } from '../support/wait.js';
import { setAside } from '../support/work-folder.js';

const UNLIMITED = 1_000_000_000;

export const eventsDedupScenario: Scenario = {
  name: 'events-dedup',
  async run(env) {
    const total = env.isQuick ? 2000 : 10_000;
    const duplicates = env.isQuick ? 400 : 2000;
    const unique = total - duplicates;
    const perDelivery = 2;
    const deliveries = Array.from({ length: unique / perDelivery }, () => randomUUID());
    const originals: Array<EventLine & { at: Date }> = [];
    for (let i = 0; i < unique; i += 1) {
      const at = pastInstant(i);
      originals.push({ delivery_id: deliveries[Math.floor(i / perDelivery)]!, event_at: at.toISOString(), at });
    }
    const repeats: EventLine[] = originals.slice(0, duplicates).map((o, k) => ({ delivery_id: o.delivery_id, event_at: sameInstantOtherwise(o.at, k) }));
    const lines = shuffle([...originals.map(({ delivery_id, event_at }) => ({ delivery_id, event_at })), ...repeats], 42);

    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, autoCreateDeliveries: true });
    const prefix = benchPrefix('events');
    const spool = join(env.workDir, 'events-spool');
    const staging = join(env.workDir, 'events-staging');
    const redis = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
    const stats = createStats(redis, createKeys(prefix).stats);
    const daemon = await spawnDaemon(
      {
        redisUrl: env.redisUrl,
        prefix,
        apiUrl: sandbox.url,
        carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
        spool,
        logFile: join(env.logDir, 'events-dedup.log'),
        env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
      },
      ['watcher', 'worker'],
    );
    try {
      await daemon.ready;
      await mkdir(staging, { recursive: true });
      await writeFile(join(staging, 'bench-events.ndjson'), ndjson(lines));
      const started = Date.now();
      await rename(join(staging, 'bench-events.ndjson'), join(spool, 'events', 'bench-events.ndjson'));
      const calls = (): number => sandbox.requests().filter((r) => r.endpoint === 'collecting').length;
      const isArchived = async (): Promise<boolean> =>
        (await readdir(join(spool, 'archive', 'events'), { recursive: true }).catch(() => [] as string[])).some((f) =>
          String(f).endsWith('bench-events.ndjson'),
        );
      await waitFor(async () => calls() >= unique && (await isArchived()), {
        timeoutMs: env.isQuick ? 120_000 : 600_000,
        what: `${unique} collecting calls and the file archived`,
      });
      const elapsedMs = Date.now() - started;
      await sleep(2000); // anything sent twice would show up now
      const log = sandbox.requests().filter((r) => r.endpoint === 'collecting');
      const ok = log.filter((r) => r.status === 200);
      const repeatsSeen = log.filter((r) => r.isRepeat === true).length;
      const distinct = new Set(
        ok.map((r) => {
          const instant = parseEventAt(r.eventAt ?? '');
          return `${r.deliveryId ?? ''}|${'instantKey' in instant ? instant.instantKey : (r.eventAt ?? '')}`;
        }),
      ).size;
      const counters = await stats.read();
      const isPassed =
        log.length === unique && ok.length === unique && repeatsSeen === 0 && distinct === unique && counters.duplicates.collecting === duplicates;
      return {
        figures: [
          { metric: 'collecting calls at the sandbox', value: log.length, unit: 'calls', target: `= ${unique}`, isMet: log.length === unique },
          { metric: 'answered as a repeat (isRepeat)', value: repeatsSeen, unit: 'calls', target: '= 0', isMet: repeatsSeen === 0 },
          {
            metric: 'daemon duplicates counter',
            value: counters.duplicates.collecting,
            unit: '',
            target: `= ${duplicates}`,
            isMet: counters.duplicates.collecting === duplicates,
          },
          { metric: 'file → all sent and archived', value: round(elapsedMs / 1000, 1), unit: `s (${Math.round((unique * 1000) / elapsedMs)} events/s)` },
        ],
        acceptance: {
          title: 'events-dedup',
          isPassed,
          lines: [
            `file: ${total.toLocaleString('en-US')} events = ${unique.toLocaleString('en-US')} distinct instants over ${deliveries.length.toLocaleString('en-US')} deliveries + ${duplicates.toLocaleString('en-US')} same-instant duplicates (other offsets/precisions), shuffled`,
            `collecting calls at the sandbox: ${log.length} (200: ${ok.length}, distinct delivery+instant: ${distinct})  expected ${unique}`,
            `answered as a repeat (isRepeat): ${repeatsSeen}  expected 0`,
            `daemon duplicates counter: ${counters.duplicates.collecting}  expected ${duplicates}  (received ${counters.received.collecting}, sent ${counters.sent.collecting})`,
          ],
        },
        notes: [
          `duplicate forms used: ${repeats
            .slice(0, 5)
            .map((r) => r.event_at)
            .join(', ')}; daemon error log lines ${daemon.errorCount()}`,
        ],
        details: { total, unique, duplicates, calls: log.length, ok: ok.length, repeatsSeen, distinct, counters, elapsedMs },
      };
    } finally {
      await daemon.stop();
      redis.disconnect();
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
      await setAside(env, spool, staging);
    }
  },
};
