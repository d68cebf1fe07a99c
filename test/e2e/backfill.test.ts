/**
 * `carrier-sync backfill <dir> --kind …`: a folder's files enqueued in place through the same
 * checks as the inbox; invalid ones listed; the files are not moved.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, type E2eEnv } from '../support/e2e-env.js';
import { runCli } from '../support/process.js';

let t: E2eEnv;
beforeAll(async () => {
  t = await createE2eEnv();
});
afterAll(async () => {
  await t.close();
});

describe('backfill', () => {
  it('queues the valid files of a folder, lists the invalid ones, and leaves the folder as it was', async () => {
    const dir = join(t.dir, 'old-labels');
    await mkdir(dir);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) await writeFile(join(dir, `${id}.pdf`), await makePdf(id));
    await writeFile(join(dir, `${randomUUID()}.pdf`), 'not a pdf');
    const before = (await readdir(dir)).sort();
    const result = await runCli(t.args('backfill', dir, '--kind', 'labels'), { env: t.env, timeoutMs: 30_000 });
    // An error ends the command with 1 too, its message on stderr and nothing on stdout: said when it happens.
    expect(result.stdout, `stderr: ${result.stderr}`).toMatch(/backfill labels: 3 queued, 0 duplicates, 1 invalid/);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/INVALID .*LABEL_NOT_PDF/);
    expect((await readdir(dir)).sort()).toEqual(before);
    const status = await runCli(t.args('status', '--json'), { env: t.env, timeoutMs: 15_000 });
    const report = JSON.parse(status.stdout) as { queues: { label: { waiting: number } } };
    expect(report.queues.label.waiting).toBe(3);
  });

  it('queues the fitting rows of an events CSV and lists a row with more or fewer fields than its header as invalid', async () => {
    const dir = join(t.dir, 'old-events');
    await mkdir(dir);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await writeFile(
      join(dir, 'events.csv'),
      `event_at,delivery_id,driver_name\n2026-11-22T04:46:26.500Z,${a},Ana\n2026-11-22T04:47:26.500Z,${b},Ana,unexpected\n2026-11-22T04:48:26.500Z,${c}\n`,
    );
    const result = await runCli(t.args('backfill', dir, '--kind', 'events'), { env: t.env, timeoutMs: 30_000 });
    expect(result.stdout, `stderr: ${result.stderr}`).toMatch(/backfill events: 1 queued, 0 duplicates, 2 invalid/);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('INVALID events.csv:3: EVENT_BAD_RECORD: 4 fields, the header has 3');
    expect(result.stdout).toContain('INVALID events.csv:4: EVENT_BAD_RECORD: 2 fields, the header has 3');
    const status = await runCli(t.args('status', '--json'), { env: t.env, timeoutMs: 15_000 });
    const report = JSON.parse(status.stdout) as { queues: { collecting: { waiting: number; delayed: number } } };
    expect(report.queues.collecting.waiting + report.queues.collecting.delayed).toBe(1);
  });

  it('refuses an unknown kind with exit 2 and one line', async () => {
    const result = await runCli(t.args('backfill', t.dir, '--kind', 'photos'), { env: t.env, timeoutMs: 15_000 });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--kind');
  });
});
