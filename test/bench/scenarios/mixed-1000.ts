/**
 * mixed-1000 (acceptance): an operator drops 1,000 label and CT-e files at once into a running
 * daemon pointed at a sandbox that answers 10% of requests with 503 (limits lifted). The mix:
 * valid documents of known deliveries, documents of cancelled deliveries (a label is refused by
 * the API, a CT-e is accepted whatever the status), documents of unknown deliveries, and files our
 * own checks refuse. Reported: accepted once by the sandbox and archived (and 0 duplicates at the
 * sandbox), refused locally in failed/ by code, dead-lettered (listDeadLetters) by apiCode — each
 * beside what the mix predicts.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createLogger } from '../../../src/log.js';
import { listDeadLetters } from '../../../src/queue/dead-letter.js';
import { openContext } from '../../../src/runtime/context.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { loadBenchConfig, spawnDaemon, type DaemonSetup } from '../support/daemon.js';
import { cnpj, cteXml, dropAll, labelPdf, stageFiles } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { round, sleep, waitFor } from '../support/wait.js';
import { countBy, isSame, listFiles, show } from '../support/tally.js';
import { setAside } from '../support/work-folder.js';

const UNLIMITED = 1_000_000_000;

type Expect = { outcome: 'accepted' } | { outcome: 'refused'; code: string } | { outcome: 'dead'; apiCode: string };
interface MixFile {
  name: string;
  bytes: Buffer;
  kind: 'labels' | 'cte';
  expect: Expect;
}

export const mixedScenario: Scenario = {
  name: 'mixed-1000',
  async run(env) {
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, faults: { errorRate: 0.1 } });
    const known = Array.from({ length: 450 }, () => sandbox.state.addDelivery({}).id);
    const cancelled = Array.from({ length: 100 }, () => sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id);
    const unknown = Array.from({ length: 100 }, () => randomUUID());
    const files: MixFile[] = [];
    const label = (id: string, i: number, expect: Expect, bytes?: Buffer): void => {
      files.push({
        name: i % 3 === 0 ? `${id}__ext-${i}.pdf` : `${id}.pdf`,
        bytes: bytes ?? labelPdf(`mixed ${i}`, 1500 + (i % 7) * 300),
        kind: 'labels',
        expect,
      });
    };
    const cte = (id: string, i: number, expect: Expect, xml?: string): void => {
      files.push({ name: `${id}.xml`, bytes: Buffer.from(xml ?? cteXml({ nCT: 7000 + i, emitCnpj: cnpj(String(112223330000 + i)) })), kind: 'cte', expect });
    };
    const accepted: Expect = { outcome: 'accepted' };
    known.slice(0, 300).forEach((id, i) => label(id, i, accepted)); // 300 labels
    known.slice(150, 450).forEach((id, i) => cte(id, i, accepted)); // 300 CT-e (150 deliveries get both)
    cancelled.slice(0, 50).forEach((id, i) => label(id, 1000 + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_ELIGIBLE' }));
    cancelled.slice(50).forEach((id, i) => cte(id, 1000 + i, accepted)); // the API takes a CT-e whatever the status
    unknown.slice(0, 50).forEach((id, i) => label(id, 2000 + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
    unknown.slice(50).forEach((id, i) => cte(id, 2000 + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
    const good = labelPdf('broken');
    for (let i = 0; i < 25; i += 1) {
      const refused = (code: string): Expect => ({ outcome: 'refused', code });
      label(randomUUID(), 3000 + i, refused('LABEL_NOT_PDF'), Buffer.from(`not a pdf ${i}\n`));
      label(randomUUID(), 3100 + i, refused('LABEL_TRUNCATED'), good.subarray(0, good.length - 200));
      label(randomUUID(), 3200 + i, refused('LABEL_TRAILING_DATA'), Buffer.concat([good, Buffer.from(`junk after the end ${i}`)]));
      files.push({ name: `bad name ${i}!.pdf`, bytes: labelPdf(`bad name ${i}`), kind: 'labels', expect: refused('SPOOL_BAD_NAME') });
      cte(randomUUID(), 3000 + i, refused('CTE_NOT_XML'), `<CTe><infCte>${i}</CTe>`);
      cte(randomUUID(), 3100 + i, refused('CTE_DOCTYPE'), cteXml({ nCT: 3100 + i, doctype: true }));
      cte(randomUUID(), 3200 + i, refused('CTE_FIELD_MISSING'), cteXml({ nCT: 3200 + i, hasDest: false }));
      const valid = cnpj(String(112223330000 + i));
      cte(
        randomUUID(),
        3300 + i,
        refused('CTE_FIELD_INVALID'),
        cteXml({ nCT: 3300 + i, emitCnpj: `${valid.slice(0, 13)}${(Number(valid.slice(13)) + 1) % 10}` }),
      );
    }

    const prefix = benchPrefix('mixed');
    const spool = join(env.workDir, 'mixed-spool');
    const setup: DaemonSetup = {
      redisUrl: env.redisUrl,
      prefix,
      apiUrl: sandbox.url,
      carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
      spool,
      logFile: join(env.logDir, 'mixed-1000.log'),
      env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
    };
    const daemon = await spawnDaemon(setup, ['watcher', 'worker']);
    const staged = await Promise.all(
      (['labels', 'cte'] as const).map(async (kind) => {
        const mine = files.filter((f) => f.kind === kind);
        return { kind, dir: await stageFiles(join(env.workDir, 'mixed-staging'), mine), names: mine.map((f) => f.name) };
      }),
    );
    try {
      await daemon.ready;
      const started = Date.now();
      await Promise.all(staged.map((s) => dropAll(s.dir, join(spool, s.kind), s.names)));
      const settled = async (): Promise<boolean> => {
        const archived = (await listFiles(join(spool, 'archive'))).filter((f) => !f.endsWith('.json'));
        const failed = (await listFiles(join(spool, 'failed'))).filter((f) => !f.endsWith('.error.json'));
        const inflight = await listFiles(join(spool, '.inflight'));
        return archived.length + failed.length >= files.length && inflight.length === 0;
      };
      await waitFor(settled, { timeoutMs: 300_000, what: 'every file archived or failed', intervalMs: 250 });
      const elapsedMs = Date.now() - started;
      await sleep(1000);

      const archived = (await listFiles(join(spool, 'archive'))).filter((f) => !f.endsWith('.json'));
      const failedReports = await Promise.all(
        (await listFiles(join(spool, 'failed')))
          .filter((f) => f.endsWith('.error.json'))
          .map(async (f) => JSON.parse(await readFile(f, 'utf8')) as { code: string; apiCode?: string | null }),
      );
      const local = failedReports.filter((r) => !r.code.startsWith('API_'));
      const log = sandbox.requests().filter((r) => r.endpoint === 'label' || r.endpoint === 'cte');
      const ok = log.filter((r) => r.status === 200);
      const perDocument = countBy(ok, (r) => `${r.endpoint}:${r.deliveryId ?? ''}`);
      const acceptedTwice = Object.values(perDocument).filter((n) => n > 1).length;
      const { config } = await loadBenchConfig(setup);
      const ctx = await openContext(config, createLogger({ level: 'silent' }), 'bench-mixed');
      const dead = await listDeadLetters({ queues: ctx.queues, attempts: ctx.attempts, dedup: ctx.dedup }).finally(() => ctx.closers.closeAll());

      const expected = {
        accepted: files.filter((f) => f.expect.outcome === 'accepted').length,
        refused: countBy(
          files.filter((f) => f.expect.outcome === 'refused'),
          (f) => (f.expect as { code: string }).code,
        ),
        dead: countBy(
          files.filter((f) => f.expect.outcome === 'dead'),
          (f) => `${f.kind === 'labels' ? 'label' : 'cte'}:${(f.expect as { apiCode: string }).apiCode}`,
        ),
      };
      const got = {
        accepted: ok.length,
        archived: archived.length,
        refused: countBy(local, (r) => r.code),
        dead: countBy(dead, (d) => `${d.kind}:${d.apiCode ?? d.errorCode}`),
        deadInFailed: failedReports.length - local.length,
      };
      const injected = log.filter((r) => r.fault === 'error').length;
      const isPassed =
        got.accepted === expected.accepted &&
        got.archived === expected.accepted &&
        acceptedTwice === 0 &&
        isSame(got.refused, expected.refused) &&
        isSame(got.dead, expected.dead) &&
        got.deadInFailed === dead.length;
      return {
        figures: [
          {
            metric: 'accepted by the sandbox / archived',
            value: `${got.accepted} / ${got.archived}`,
            unit: '',
            target: `${expected.accepted} / ${expected.accepted}`,
            isMet: got.accepted === expected.accepted && got.archived === expected.accepted,
          },
          { metric: 'documents accepted more than once', value: acceptedTwice, unit: '', target: '0', isMet: acceptedTwice === 0 },
          {
            metric: 'refused locally (failed/)',
            value: local.length,
            unit: 'files',
            target: String(files.filter((f) => f.expect.outcome === 'refused').length),
            isMet: isSame(got.refused, expected.refused),
          },
          {
            metric: 'dead-lettered (listDeadLetters)',
            value: dead.length,
            unit: 'items',
            target: String(files.filter((f) => f.expect.outcome === 'dead').length),
            isMet: isSame(got.dead, expected.dead),
          },
          { metric: 'drop → every file settled', value: round(elapsedMs / 1000, 1), unit: `s (${injected} injected 503s retried)` },
        ],
        acceptance: {
          title: 'mixed-1000',
          isPassed,
          lines: [
            `1,000 files dropped at once; sandbox: 10% injected 503 (${injected} of ${log.length} document requests), limits lifted`,
            `accepted once by the sandbox: ${got.accepted} (expected ${expected.accepted}); archived: ${got.archived}; documents accepted more than once: ${acceptedTwice}`,
            `refused locally in failed/: ${local.length} — ${show(got.refused)}`,
            `   expected: ${show(expected.refused)}`,
            `dead-lettered (listDeadLetters): ${dead.length} — ${show(got.dead)}; their files in failed/: ${got.deadInFailed}`,
            `   expected: ${show(expected.dead)}`,
          ],
        },
        notes: [`daemon watcher+worker, backoffMs 100, notFoundAttempts 4, maxAttempts 8; error log lines (dead letters log at error): ${daemon.errorCount()}`],
        details: { expected, got, acceptedTwice, injected, elapsedMs },
      };
    } finally {
      await daemon.stop();
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
      await setAside(env, spool, ...staged.map((s) => s.dir));
    }
  },
};
