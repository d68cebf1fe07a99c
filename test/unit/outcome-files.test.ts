/**
 * Moving files to failed/ and archive/, and what a crash in the middle of a move can leave behind.
 * The moves run on a real temporary folder; a crash is reproduced by leaving exactly what a killed
 * process would (a report's temp file, a report whose file never followed it).
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { createOutcomes } from '../../src/outcome/apply.js';
import { failInto, moveInto, sweepInterruptedMoves } from '../../src/outcome/files.js';
import type { Batches } from '../../src/queue/batches.js';
import { refusalReport } from '../../src/queue/failure-report.js';
import { originalName, spoolPaths } from '../../src/spool/paths.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'carrier-sync-outcome-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const CLAIM = '0123456789abcdef-01234567';
const report = { kind: 'cte', at: '2026-11-23T00:00:00.000Z', content: refusalReport({ code: 'CTE_NOT_XML', message: 'not XML' }) };
const readJson = async (path: string): Promise<Record<string, unknown>> => JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;

// The same moves with the async file calls (a network share) and the synchronous ones (a local disk).
describe.each(['share', 'local'] as const)('%s disk', (disk) => {
  describe('moveInto', () => {
    it('moves under a free name, returns null once its source is gone, and makes its folder again when it was taken away', async () => {
      const archive = join(root, 'archive', 'day');
      for (const n of [1, 2]) await writeFile(join(root, `in-${n}`), `bytes ${n}`);
      expect(await moveInto(join(root, 'in-1'), archive, 'a.pdf', disk)).toBe(join(archive, 'a.pdf'));
      expect(await moveInto(join(root, 'in-1'), archive, 'a.pdf', disk)).toBeNull();
      // The folder is known to this process now; an operator removes it between two moves.
      await rm(archive, { recursive: true });
      expect(await moveInto(join(root, 'in-2'), archive, 'a.pdf', disk)).toBe(join(archive, 'a.pdf'));
      expect(await readFile(join(archive, 'a.pdf'), 'utf8')).toBe('bytes 2');
      expect(await readdir(root)).not.toContain('in-2');
    });
  });

  describe('moves of files of one name into one folder at once', () => {
    it('never lets one overwrite another: every file ends under its own name', async () => {
      const sources = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const path = join(root, `in-${i}.xml`);
          await writeFile(path, `version ${i}`);
          return path;
        }),
      );
      const dir = join(root, 'archive');
      const targets = await Promise.all(
        sources.map((source, i) =>
          i % 2 === 0
            ? moveInto(source, dir, 'same.xml', disk)
            : failInto(
                source,
                dir,
                'same.xml',
                { kind: 'cte', at: new Date().toISOString(), content: refusalReport({ code: 'CTE_NOT_XML', message: 'm' }) },
                disk,
              ),
        ),
      );
      expect(new Set(targets).size).toBe(8);
      const contents = await Promise.all((await readdir(dir)).filter((name) => !name.endsWith('.error.json')).map((name) => readFile(join(dir, name), 'utf8')));
      expect(contents.sort()).toEqual(Array.from({ length: 8 }, (_, i) => `version ${i}`));
    });
  });

  describe('failInto', () => {
    it('writes the report and moves the file even when its known folder was taken away', async () => {
      const failed = join(root, 'failed-again');
      await writeFile(join(root, 'in-1'), 'one');
      await failInto(join(root, 'in-1'), failed, 'x.xml', report, disk);
      await rm(failed, { recursive: true });
      await writeFile(join(root, 'in-2'), 'two');
      expect(await failInto(join(root, 'in-2'), failed, 'x.xml', report, disk)).toBe(join(failed, 'x.xml'));
      expect((await readdir(failed)).sort()).toEqual(['x.xml', 'x.xml.error.json']);
    });

    it('puts the file and its report in failed/, a second file of that name under a free name, and leaves no temp file', async () => {
      const failed = join(root, 'failed');
      for (const n of [1, 2]) {
        await writeFile(join(root, `in-${n}`), `bytes ${n}`);
        await failInto(join(root, `in-${n}`), failed, 'x.xml', report, disk);
      }
      expect((await readdir(failed)).sort()).toEqual(['x.xml', 'x.xml.error.json', 'x~2.xml', 'x~2.xml.error.json']);
      expect(await readJson(join(failed, 'x~2.xml.error.json'))).toMatchObject({ code: 'CTE_NOT_XML', file: 'x~2.xml' });
      expect(await readFile(join(failed, 'x~2.xml'), 'utf8')).toBe('bytes 2');
    });

    it('never overwrites a report whose file left (an events file archived with its bad-lines report kept)', async () => {
      const failed = join(root, 'failed');
      await mkdir(failed);
      await writeFile(join(failed, 'a.ndjson.error.json'), '{"code":"EVENT_BAD_RECORD","first":true}');
      await writeFile(join(root, 'in'), 'later file');
      expect(await failInto(join(root, 'in'), failed, 'a.ndjson', report, disk)).toBe(join(failed, 'a~2.ndjson'));
      expect(await readJson(join(failed, 'a.ndjson.error.json'))).toEqual({ code: 'EVENT_BAD_RECORD', first: true });
    });

    it('names the claim of an in-flight source in the report', async () => {
      await writeFile(join(root, `${CLAIM}~x.xml`), 'x');
      await failInto(join(root, `${CLAIM}~x.xml`), join(root, 'failed'), 'x.xml', report, disk);
      expect(await readJson(join(root, 'failed', 'x.xml.error.json'))).toMatchObject({ claim: CLAIM });
    });

    it('moves nothing when its source is already gone (a move redone after a crash)', async () => {
      expect(await failInto(join(root, 'gone'), join(root, 'failed'), 'x.xml', report, disk)).toBeNull();
    });
  });
});

describe('sweepInterruptedMoves', () => {
  it('clears temp files and the reports of sources still waiting; keeps finished refusals and reports of files taken away', async () => {
    const dir = join(root, 'failed', 'cte');
    await mkdir(dir, { recursive: true });
    const files: Record<string, string> = {
      'done.xml': '<x/>',
      'done.xml.error.json': JSON.stringify({ claim: CLAIM }),
      // Cut off by a crash: the source is still in flight (its claim) or still in the inbox.
      'inflight.xml.error.json': JSON.stringify({ claim: CLAIM }),
      'inbox~2.xml.error.json': JSON.stringify({ code: 'CTE_NOT_XML' }),
      '.cut.xml.error.json.4242.tmp': '{"co',
      // Finished long ago; the file went away (archived events file, or an operator took it).
      'a.ndjson.error.json': JSON.stringify({ claim: 'fedcba9876543210-76543210' }),
      'taken.xml.error.json': JSON.stringify({ code: 'CTE_NOT_XML' }),
      'operator-notes.txt': 'keep me',
    };
    for (const [name, body] of Object.entries(files)) await writeFile(join(dir, name), body);

    const swept = await sweepInterruptedMoves(dir, { claims: new Set([CLAIM]), inbox: new Set(['inbox.xml']) });
    expect(swept.sort()).toEqual(['.cut.xml.error.json.4242.tmp', 'inbox~2.xml.error.json', 'inflight.xml.error.json']);
    expect((await readdir(dir)).sort()).toEqual(['a.ndjson.error.json', 'done.xml', 'done.xml.error.json', 'operator-notes.txt', 'taken.xml.error.json']);
  });

  it('is a no-op for a folder that does not exist yet', async () => {
    expect(await sweepInterruptedMoves(join(root, 'nowhere'), { claims: new Set(), inbox: new Set() })).toEqual([]);
  });
});

describe('a replayed dead letter accepted by the API', () => {
  it('leaves failed/ for archive/ with its report, whichever name it got there', async () => {
    const paths = spoolPaths(join(root, 'spool'), 'test');
    const failed = paths.failed('labels');
    await mkdir(failed, { recursive: true });
    // x.pdf was replayed earlier (gone from failed/); the second dead letter of that name is x~2.pdf.
    await writeFile(join(failed, 'x~2.pdf'), '%PDF-1.7 …');
    await writeFile(join(failed, 'x~2.pdf.error.json'), JSON.stringify({ code: 'API_REJECTED', jobId: 'label.x.2' }));
    await writeFile(join(failed, 'x~3.pdf.error.json'), JSON.stringify({ code: 'API_REJECTED', jobId: 'label.x.3' }));
    const outcomes = createOutcomes({
      paths,
      disk: 'local',
      batches: {} as Batches,
      inflight: { find: () => [], forget: () => undefined },
      clock: systemClock,
      logger: silentLogger,
    });

    await outcomes.apply({
      kind: 'label',
      jobId: 'label.x.2',
      deliveryId: 'x',
      result: 'accepted',
      origin: { source: 'spool', spoolId: 'test', fileName: 'x.pdf', contentId: '0123456789abcdef' },
      attempts: 2,
      at: new Date().toISOString(),
    });

    expect((await readdir(failed)).sort()).toEqual(['x~3.pdf.error.json']);
    const day = new Date().toISOString().slice(0, 10);
    expect((await readdir(join(paths.root, 'archive', 'labels', day))).sort()).toEqual(['x.pdf', 'x.pdf.dead-letter.json']);
  });
});

describe('originalName', () => {
  it('undoes the ~n of a taken name', () => {
    expect(['x.pdf', 'x~2.pdf', 'x~13.xml', 'a.b~2.ndjson', 'noext~4'].map(originalName)).toEqual(['x.pdf', 'x.pdf', 'x.xml', 'a.b.ndjson', 'noext']);
  });
});
