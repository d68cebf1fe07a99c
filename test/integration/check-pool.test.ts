/**
 * The file checks on worker threads (src/validate/pool/): a hostile label costs at most its budget,
 * on a thread that is not the event loop's, and is refused with a named reason; the pool keeps
 * checking after a thread was stopped; it gives the verdicts of the validators run in place (the
 * path `validate`, `backfill` and the daemon share); and in the daemon the refused file ends in
 * failed/ with its report. Real threads (the build's check-task.js), real Redis, the sandbox.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import type { ChecksConfig } from '../../src/config/schema.js';
import { silentLogger } from '../../src/log.js';
import { checkCte, checkLabel, eventsFormatOf, parseEventsFile } from '../../src/validate/index.js';
import { createCheckPool, type CheckPool } from '../../src/validate/pool/check-pool.js';
import { makePdf, manyObjectsPdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

const { checks: DEFAULTS, spool: LIMITS } = loadConfig({ env: {} });
const FIXTURES = resolve(import.meta.dirname, '../fixtures');
/** Issue 39's hostile label: 300,000 tiny objects in ~10 MB, a valid one-page PDF otherwise. */
const HOSTILE = manyObjectsPdf(300_000);

let pool: CheckPool | undefined;
let running: TestDaemon | undefined;
afterEach(async () => {
  await pool?.close();
  await running?.stop();
  pool = undefined;
  running = undefined;
});

function poolWith(documents: ChecksConfig['documents'], threads = 1): CheckPool {
  pool = createCheckPool({ ...DEFAULTS, threads, documents, onThreadFromBytes: 0 }, silentLogger);
  return pool;
}

describe('file checks on threads', () => {
  it('a label over its memory budget is refused LABEL_TOO_COMPLEX naming the limit, off the event loop; the files behind it get their own verdicts', async () => {
    const checks = poolWith({ cpuMs: 60_000, memoryMb: 64 });
    const cte = await readFile(join(FIXTURES, 'cte', 'cte-valid-cteproc.xml'));
    const events = await readFile(join(FIXTURES, 'events', 'events-mixed-offsets.ndjson'));
    const goodPdf = await makePdf('behind');
    const before = performance.eventLoopUtilization();
    const [verdict, label, document, file] = await Promise.all([
      checks.label(HOSTILE, { maxBytes: LIMITS.maxLabelBytes }),
      checks.label(goodPdf, { maxBytes: LIMITS.maxLabelBytes }),
      checks.cte(cte, { maxBytes: LIMITS.maxCteBytes }),
      checks.events(events, 'ndjson', { maxLineBytes: LIMITS.maxEventLineBytes }),
    ]);
    // Parsed on the event loop, pdf-lib would keep it busy nearly all the time (it only yields between chunks).
    expect(performance.eventLoopUtilization(before).utilization).toBeLessThan(0.5);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.code).toBe('LABEL_TOO_COMPLEX');
    expect(verdict.error.message).toContain('64 MB');
    expect(verdict.error.message).toContain('CARRIER_SYNC_CHECK_MEMORY_MB');
    expect(verdict.error.params).toEqual({ budget: 'memory', memoryMb: 64 });
    expect([label.ok, document.ok, file.ok]).toEqual([true, true, true]);
    expect(file.ok && file.value).toEqual(parseEventsFile(events.toString('utf8'), 'ndjson', { maxLineBytes: LIMITS.maxEventLineBytes }));
  });

  it('a label over its CPU budget is refused LABEL_TOO_COMPLEX naming the limit, and the next label is checked', async () => {
    const checks = poolWith({ cpuMs: 200, memoryMb: 1024 });
    const verdict = await checks.label(HOSTILE, { maxBytes: LIMITS.maxLabelBytes });
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.code).toBe('LABEL_TOO_COMPLEX');
    expect(verdict.error.message).toContain('200 ms of CPU time');
    expect(verdict.error.message).toContain('CARRIER_SYNC_CHECK_CPU_MS');
    expect(verdict.error.params).toEqual({ budget: 'cpu', cpuMs: 200 });
    expect((await checks.label(await makePdf('after'), { maxBytes: LIMITS.maxLabelBytes })).ok).toBe(true);
  });

  it('gives every fixture the verdict of the validators run in place, on a thread and (small files) on the event loop', async () => {
    const onThreads = poolWith(DEFAULTS.documents, 2);
    const asConfigured = createCheckPool(DEFAULTS, silentLogger);
    try {
      for (const kind of ['labels', 'cte', 'events'] as const) {
        for (const name of await readdir(join(FIXTURES, kind))) {
          const bytes = await readFile(join(FIXTURES, kind, name));
          const [onThread, inPlace] = await verdictsOf(onThreads, kind, name, bytes);
          expect(onThread, `${kind}/${name} on a thread`).toEqual(inPlace);
          expect((await verdictsOf(asConfigured, kind, name, bytes))[0], `${kind}/${name} as configured`).toEqual(inPlace);
        }
      }
    } finally {
      await asConfigured.close();
    }
  });

  it('in the daemon, a label over its budget ends in failed/ with its report, and a good one beside it is sent', async () => {
    running = await startTestDaemon({ settings: { checks: { documents: { cpuMs: 60_000, memoryMb: 64 } } }, sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const [hostile, good] = [`${randomUUID()}.pdf`, `${randomUUID()}.pdf`];
    await writeFile(join(t.spool, 'labels', hostile), HOSTILE);
    await writeFile(join(t.spool, 'labels', good), await makePdf('good'));
    const reportPath = join(t.spool, 'failed', 'labels', `${hostile}.error.json`);
    const report = await waitFor(async () => JSON.parse(await readFile(reportPath, 'utf8')) as Record<string, unknown>, {
      what: 'the report',
      timeoutMs: 30_000,
    });
    expect(report['code']).toBe('LABEL_TOO_COMPLEX');
    expect(await readdir(join(t.spool, 'failed', 'labels'))).toEqual([hostile, `${hostile}.error.json`].sort());
    await waitFor(async () => (await readdir(join(t.spool, 'archive', 'labels')).catch(() => [])).length === 1, {
      what: 'the good label archived',
      timeoutMs: 30_000,
    });
    expect(await readdir(join(t.spool, 'labels'))).toEqual([]);
  });
});

/** A verdict's shape that both paths share: ok and what was checked, or the code and English message. */
async function verdictsOf(checks: CheckPool, kind: 'labels' | 'cte' | 'events', name: string, bytes: Buffer): Promise<[unknown, unknown]> {
  const shape = (v: { ok: true; warnings: string[] } | { ok: false; error: { code: string; message: string } }): unknown =>
    v.ok ? { ok: true, warnings: v.warnings } : { ok: false, code: v.error.code, message: v.error.message };
  if (kind === 'labels') {
    const [thread, place] = [await checks.label(bytes, { maxBytes: LIMITS.maxLabelBytes }), await checkLabel(bytes, { maxBytes: LIMITS.maxLabelBytes })];
    const pages = (v: typeof thread | typeof place): unknown => (v.ok ? v.value.pageCount : null);
    return [
      [shape(thread), pages(thread)],
      [shape(place), pages(place)],
    ];
  }
  if (kind === 'cte') {
    const [thread, place] = [await checks.cte(bytes, { maxBytes: LIMITS.maxCteBytes }), checkCte(bytes, { maxBytes: LIMITS.maxCteBytes })];
    return [
      [shape(thread), thread.ok && thread.value.xml],
      [shape(place), place.ok && place.value.xml],
    ];
  }
  const format = eventsFormatOf(name) ?? 'ndjson';
  const thread = await checks.events(bytes, format, { maxLineBytes: LIMITS.maxEventLineBytes });
  return [thread.ok ? thread.value : thread.error.code, parseEventsFile(bytes.toString('utf8'), format, { maxLineBytes: LIMITS.maxEventLineBytes })];
}
