/**
 * Every path that writes a `failed/<kind>/<file>.error.json` writes the same keys (issue 11, "one
 * report format"): a local refusal at claim time, a dead letter reported by its outcome, the same
 * dead letter found by the in-flight reconcile after its outcome was lost, an events file's
 * invalid lines, an events file's dead-lettered events. Real Redis, the sandbox over HTTP.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENTS_REPORT_KEYS, REPORT_KEYS } from '../../src/queue/failure-report.js';
import { contentIdOf, inflightName, spoolPaths } from '../../src/spool/paths.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

type Report = Record<string, unknown>;
const BODY_KEYS = REPORT_KEYS.filter((key) => !['file', 'kind', 'at', 'claim'].includes(key));
const API_FIELDS = [
  'code',
  'message',
  'status',
  'apiCode',
  'apiMessage',
  'params',
  'attempts',
  'firstFailureAt',
  'lastFailureAt',
  'jobId',
  'deliveryId',
  'hint',
] as const;

describe('.error.json: one format for every writer', () => {
  it('local refusals, outcome and reconcile dead letters, and events reports have the same keys; a dead letter reads the same from either path', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const failed = (kind: string, name: string): string => join(t.spool, 'failed', kind, `${name}.error.json`);
    const read = async (kind: string, name: string): Promise<Report> => JSON.parse(await readFile(failed(kind, name), 'utf8')) as Report;
    const has = async (kind: string, name: string): Promise<boolean> =>
      (await readdir(join(t.spool, 'failed', kind)).catch((): string[] => [])).includes(`${name}.error.json`);

    const notPdf = `${randomUUID()}.pdf`;
    const cancelled = t.sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id;
    const refusedPdf = await makePdf('refused by the API');
    const [good1, good2] = [randomUUID(), randomUUID()];
    await writeFile(join(t.spool, 'labels', notPdf), 'not a pdf');
    await writeFile(join(t.spool, 'events', 'notes.txt'), 'not an events file');
    await writeFile(join(t.spool, 'labels', `${cancelled}.pdf`), refusedPdf);
    await writeFile(
      join(t.spool, 'events', 'bad-lines.ndjson'),
      `{"delivery_id":"${good1}","event_at":"2026-11-22T04:46:26Z"}\n{"delivery_id":"${good1}","event_at":"2026-11-22T04:46:26"}\n`,
    );
    await writeFile(join(t.spool, 'events', 'dead.csv'), `delivery_id,event_at\n${good2},2026-11-22T04:46:26Z\n${cancelled},2026-11-22T04:47:26Z\n`);
    await waitFor(
      async () =>
        (
          await Promise.all([
            has('labels', notPdf),
            has('events', 'notes.txt'),
            has('labels', `${cancelled}.pdf`),
            has('events', 'bad-lines.ndjson'),
            has('events', 'dead.csv'),
          ])
        ).every(Boolean),
      {
        what: 'five reports',
        timeoutMs: 30_000,
      },
    );

    const localLabel = await read('labels', notPdf);
    const localEvents = await read('events', 'notes.txt');
    const outcomeDead = await read('labels', `${cancelled}.pdf`);
    // The lines report is rewritten once its file is archived, saying where it went.
    const badLines = await waitFor(
      async () => {
        const report = await read('events', 'bad-lines.ndjson');
        return report['archivedTo'] === null ? null : report;
      },
      { what: "the lines report naming the archived file's place" },
    );
    const deadEvents = await read('events', 'dead.csv');
    for (const report of [localLabel, localEvents, outcomeDead]) expect(Object.keys(report)).toEqual([...REPORT_KEYS]);
    for (const report of [badLines, deadEvents]) expect(Object.keys(report)).toEqual([...REPORT_KEYS, ...EVENTS_REPORT_KEYS]);

    expect(localLabel).toMatchObject({ code: 'LABEL_NOT_PDF', deliveryId: notPdf.slice(0, -4), status: null, attempts: null, jobId: null, claim: null });
    expect(localEvents).toMatchObject({ code: 'SPOOL_BAD_NAME', deliveryId: null, claim: null });
    expect(outcomeDead).toMatchObject({
      code: 'API_REJECTED',
      status: 400,
      apiCode: expect.any(String),
      apiMessage: expect.any(String),
      attempts: 1,
      jobId: expect.any(String),
      deliveryId: cancelled,
      hint: null,
      claim: expect.any(String),
    });
    for (const key of ['firstFailureAt', 'lastFailureAt'] as const) expect(outcomeDead[key]).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(badLines).toMatchObject({ code: 'EVENT_BAD_RECORD', invalidLines: [{ line: 2, code: 'EVENT_BAD_TIME' }], deadLettered: [], accepted: 1 });
    expect(badLines['archivedTo']).toMatch(/^archive\/events\/\d{4}-\d\d-\d\d\/bad-lines\.ndjson$/);
    expect(await readFile(join(t.spool, String(badLines['archivedTo'])), 'utf8')).toContain(good1);
    expect(deadEvents['archivedTo']).toBeNull();
    const deadEntries = deadEvents['deadLettered'] as Report[];
    expect(deadEntries.map((entry) => Object.keys(entry))).toEqual([['line', ...BODY_KEYS]]);
    expect(deadEntries[0]).toMatchObject({
      line: 3,
      code: 'API_REJECTED',
      status: 400,
      apiCode: 'DELIVERY_NOT_ELIGIBLE',
      attempts: 1,
      deliveryId: cancelled,
      jobId: expect.any(String),
    });
    expect(deadEvents).toMatchObject({ code: 'API_REJECTED', accepted: 1, invalidLines: [] });

    // The outcome of a dead letter is lost (crash): its file is still in flight at the next start,
    // and the reconcile finds the failed job. Its report must read like the outcome's.
    const claimId = `${contentIdOf(refusedPdf)}-0badc0de`;
    await writeFile(join(spoolPaths(t.spool, t.config.spool.id).inflight('labels'), inflightName(claimId, `${cancelled}.pdf`)), refusedPdf);
    await t.restart();
    await waitFor(() => has('labels', `${cancelled}~2.pdf`), { what: 'the reconcile report', timeoutMs: 30_000 });
    const reconcileDead = await read('labels', `${cancelled}~2.pdf`);
    expect(Object.keys(reconcileDead)).toEqual([...REPORT_KEYS]);
    const apiFields = (report: Report): Report => Object.fromEntries(API_FIELDS.map((key) => [key, report[key]]));
    expect(apiFields(reconcileDead)).toEqual(apiFields(outcomeDead));
    expect(reconcileDead).toMatchObject({ file: `${cancelled}~2.pdf`, kind: 'labels', claim: claimId });
  });
});
