/**
 * Moving files to failed/ and what a crash in the middle of it can leave there. The moves run on a
 * real temporary folder; a crash is reproduced by leaving behind exactly what a killed process
 * would (a report's temp file, a report whose file never followed it).
 */
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { failInto, sweepInterruptedMoves } from '../../src/outcome/files.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'carrier-sync-outcome-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const report = { code: 'CTE_NOT_XML', message: 'not XML', file: 'x.xml', kind: 'cte', at: '2026-11-23T00:00:00.000Z' };

describe('failInto', () => {
  it('puts the file and its report in failed/, with a free name for a second file of that name, and leaves no temp file', async () => {
    const failed = join(root, 'failed');
    for (const n of [1, 2]) {
      await writeFile(join(root, `in-${n}`), `bytes ${n}`);
      await failInto(join(root, `in-${n}`), failed, 'x.xml', report);
    }
    expect((await readdir(failed)).sort()).toEqual(['x.xml', 'x.xml.error.json', 'x~2.xml', 'x~2.xml.error.json']);
    expect(JSON.parse(await readFile(join(failed, 'x~2.xml.error.json'), 'utf8'))).toMatchObject({ code: 'CTE_NOT_XML', file: 'x~2.xml' });
    expect(await readFile(join(failed, 'x~2.xml'), 'utf8')).toBe('bytes 2');
  });

  it('moves nothing when its source is already gone (a move redone after a crash)', async () => {
    expect(await failInto(join(root, 'gone'), join(root, 'failed'), 'x.xml', report)).toBeNull();
  });
});

describe('sweepInterruptedMoves', () => {
  it('clears report temp files and, for documents, reports whose file never arrived; keeps finished refusals', async () => {
    const dir = join(root, 'failed', 'cte');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'done.xml'), '<x/>');
    await writeFile(join(dir, 'done.xml.error.json'), '{}');
    await writeFile(join(dir, 'orphan.xml.error.json'), '{}');
    await writeFile(join(dir, '.cut.xml.error.json.4242.tmp'), '{"co');
    await writeFile(join(dir, 'operator-notes.txt'), 'keep me');

    expect((await sweepInterruptedMoves(dir, true)).sort()).toEqual(['.cut.xml.error.json.4242.tmp', 'orphan.xml.error.json']);
    expect((await readdir(dir)).sort()).toEqual(['done.xml', 'done.xml.error.json', 'operator-notes.txt']);
  });

  it('keeps an events report without its file (the file was archived; the report lists its bad lines)', async () => {
    const dir = join(root, 'failed', 'events');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'a.ndjson.error.json'), '{}');
    await writeFile(join(dir, '.b.ndjson.error.json.7.tmp'), '');

    expect(await sweepInterruptedMoves(dir, false)).toEqual(['.b.ndjson.error.json.7.tmp']);
    expect(await readdir(dir)).toEqual(['a.ndjson.error.json']);
  });

  it('is a no-op for a folder that does not exist yet', async () => {
    expect(await sweepInterruptedMoves(join(root, 'nowhere'), true)).toEqual([]);
  });
});
