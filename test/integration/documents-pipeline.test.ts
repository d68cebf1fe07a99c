/**
 * Labels and CT-e end to end: files in the spool → validation → BullMQ on real Redis → the
 * sandbox over real HTTP → archive/ or failed/. Assertions read the sandbox's own request log.
 */
import { createHash, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFile, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { retryDeadLetters, listDeadLetters } from '../../src/queue/dead-letter.js';
import { openContext } from '../../src/runtime/context.js';
import { createLogger } from '../../src/log.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { contentIdOf } from '../../src/spool/paths.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(d, entry.name));
      else out.push(join(d, entry.name).slice(dir.length + 1));
    }
  };
  await walk(dir);
  return out.sort();
}

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const labelRequests = (t: TestDaemon) => t.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200);

describe('labels and CT-e from the spool to the API', () => {
  it('sends files dropped before start and while running once each, and archives them', async () => {
    const early = randomUUID();
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    // "before start": stop, drop, start again.
    await t.daemon.stop();
    const earlyPdf = await makePdf('early');
    await writeFile(join(t.spool, 'labels', `${early}.pdf`), earlyPdf);
    await t.restart();
    const late = randomUUID();
    const latePdf = await makePdf('late');
    await writeFile(join(t.spool, 'labels', `${late}__ORD-77.pdf`), latePdf);
    const cteDelivery = randomUUID();
    await writeFile(join(t.spool, 'cte', `${cteDelivery}.xml`), makeCteXml());

    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 3, { what: '3 archived files' });
    const archived = await filesUnder(join(t.spool, 'archive'));
    expect(archived.map((f) => f.replace(/\d{4}-\d{2}-\d{2}/, 'DATE'))).toEqual(
      [`cte/DATE/${cteDelivery}.xml`, `labels/DATE/${early}.pdf`, `labels/DATE/${late}__ORD-77.pdf`].sort(),
    );
    expect(labelRequests(t)).toHaveLength(2);
    expect(t.sandbox.state.deliveries.get(early)?.label?.sha256).toBe(sha(earlyPdf));
    expect(t.sandbox.state.deliveries.get(late)?.label?.external_id).toBe('ORD-77');
    expect(t.sandbox.requests().filter((r) => r.endpoint === 'cte' && r.status === 200)).toHaveLength(1);
    expect(await filesUnder(join(t.spool, 'labels'))).toEqual([]);
    expect(await filesUnder(join(t.spool, '.inflight'))).toEqual([]);
  });

  it.each([
    { how: 'inotify', spool: {} },
    { how: 'polling: a network share', spool: { usePolling: true, pollIntervalMs: 50 } },
  ])('does not read a file while it is still being written, nor temporary names ($how)', async ({ spool }) => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { spool: { writeStableMs: 400, ...spool } } });
    const t = running;
    const id = randomUUID();
    const pdf = await makePdf('slow copy', 3);
    const path = join(t.spool, 'labels', `${id}.pdf`);
    // A slow copy: the file grows in chunks 100 ms apart, well inside the 400 ms stable window.
    const chunk = Math.ceil(pdf.length / 8);
    for (let at = 0; at < pdf.length; at += chunk) {
      await appendFile(path, pdf.subarray(at, at + chunk));
      await new Promise((r) => setTimeout(r, 100));
    }
    // A temporary name is ignored until renamed.
    const tmpId = randomUUID();
    const tmpPdf = await makePdf('tmp');
    await writeFile(join(t.spool, 'labels', `${tmpId}.pdf.part`), tmpPdf);
    await waitFor(() => labelRequests(t).length === 1, { what: 'the slow file sent' });
    expect(t.sandbox.state.deliveries.get(id)?.label?.sha256).toBe(sha(pdf));
    expect(await readdir(join(t.spool, 'labels'))).toEqual([`${tmpId}.pdf.part`]);
    await rename(join(t.spool, 'labels', `${tmpId}.pdf.part`), join(t.spool, 'labels', `${tmpId}.pdf`));
    await waitFor(() => labelRequests(t).length === 2, { what: 'the renamed file sent' });
    expect(t.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status !== 200)).toEqual([]);
  });

  it('sends an identical re-drop once and lets a newer label replace an older one', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const first = await makePdf('v1');
    await writeFile(join(t.spool, 'labels', `${id}.pdf`), first);
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 1);
    await writeFile(join(t.spool, 'labels', `${id}.pdf`), first);
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 2, { what: 'the re-drop archived' });
    expect(labelRequests(t)).toHaveLength(1);
    const second = await makePdf('v2');
    await writeFile(join(t.spool, 'labels', `${id}.pdf`), second);
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 3, { what: 'the new version archived' });
    expect(labelRequests(t)).toHaveLength(2);
    expect(t.sandbox.state.deliveries.get(id)?.label?.sha256).toBe(sha(second));
    const names = (await filesUnder(join(t.spool, 'archive'))).map((f) => f.slice(f.lastIndexOf('/') + 1));
    expect(names.sort()).toEqual([`${id}.pdf`, `${id}~2.pdf`, `${id}~3.pdf`]);
  });

  it('refuses every invalid kind locally with a reason, and sends none of them', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { spool: { maxLabelBytes: 50_000 } } });
    const t = running;
    const ok = randomUUID();
    const drops: Array<[string, string, Buffer | string, string]> = [
      ['labels', `${randomUUID()}.pdf`, 'oops\n', 'LABEL_NOT_PDF'],
      ['labels', `${randomUUID()}.pdf`, (await makePdf('x')).subarray(0, 300), 'LABEL_'],
      ['labels', `${randomUUID()}.pdf`, Buffer.concat([await makePdf('big'), Buffer.alloc(60_000, 32)]), 'LABEL_TOO_LARGE'],
      ['labels', 'not a delivery id!.pdf', await makePdf('n'), 'SPOOL_BAD_NAME'],
      ['labels', `${randomUUID()}.txt`, 'hello', 'SPOOL_BAD_NAME'],
      ['cte', `${randomUUID()}.xml`, '<root/>', 'CTE_NOT_CTE'],
      ['cte', `${randomUUID()}.xml`, makeCteXml({ cUF: '01' }), 'CTE_FIELD_INVALID'],
      ['cte', `${randomUUID()}.xml`, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><CTe/>', 'CTE_DOCTYPE'],
      ['cte', `${randomUUID()}.xml`, '<CTe><infCte>', 'CTE_NOT_XML'],
      ['labels', `${ok}.pdf`, await makePdf('ok'), ''],
    ];
    for (const [kind, name, body] of drops) await writeFile(join(t.spool, kind, name), body);
    await mkdir(join(t.spool, 'labels', 'a-directory'));
    const target = join(t.spool, '..', `${t.prefix}-outside.pdf`);
    await writeFile(target, await makePdf('outside'));
    await symlink(target, join(t.spool, 'labels', `${randomUUID()}-link.pdf`));
    execFileSync('mkfifo', [join(t.spool, 'cte', 'a-fifo.xml')]);
    await waitFor(async () => (await filesUnder(join(t.spool, 'failed'))).filter((f) => !f.endsWith('.error.json')).length >= drops.length - 1, {
      what: 'refused files in failed/',
    }).catch(async (error: unknown) => {
      throw new Error(
        `${String(error)}; failed/: ${(await filesUnder(join(t.spool, 'failed'))).join(', ')}; labels/: ${(await filesUnder(join(t.spool, 'labels'))).join(', ')}; cte/: ${(await filesUnder(join(t.spool, 'cte'))).join(', ')}; drops: ${drops.map(([k, n, , c]) => `${k}/${n}=${c}`).join(', ')}; archive: ${(await filesUnder(join(t.spool, 'archive'))).join(', ')}`,
      );
    });
    await waitFor(async () => (await readdir(join(t.spool, 'failed', 'labels'))).includes('a-directory'), { what: 'the directory refused' });
    for (const [kind, name, , code] of drops.filter(([, , , c]) => c !== '')) {
      const report = JSON.parse(await readFile(join(t.spool, 'failed', kind, `${name}.error.json`), 'utf8')) as { code: string; message: string };
      expect(report.code, name).toContain(code);
      expect(report.message.length, name).toBeGreaterThan(10);
    }
    const dirReport = JSON.parse(await readFile(join(t.spool, 'failed', 'labels', 'a-directory.error.json'), 'utf8')) as { code: string };
    expect(dirReport.code).toBe('SPOOL_NOT_REGULAR_FILE');
    await waitFor(async () => (await readdir(join(t.spool, 'failed', 'cte'))).includes('a-fifo.xml.error.json'), { what: 'the FIFO refused' });
    const linkReports = async (): Promise<string[]> => (await readdir(join(t.spool, 'failed', 'labels'))).filter((f) => f.endsWith('-link.pdf.error.json'));
    await waitFor(async () => (await linkReports()).length > 0, { what: 'the symlink refused' });
    const links = await linkReports();
    expect(links).toHaveLength(1);
    const linkReport = JSON.parse(await readFile(join(t.spool, 'failed', 'labels', links[0]!), 'utf8')) as { code: string; message: string };
    expect(linkReport).toMatchObject({ code: 'SPOOL_NOT_REGULAR_FILE' });
    expect(linkReport.message).toContain('symbolic link');
    await rm(target, { force: true });
    await waitFor(() => labelRequests(t).length === 1, { what: 'the valid label sent' });
    expect(t.sandbox.requests().filter((r) => r.endpoint !== 'control')).toHaveLength(1);
  });

  it('clears at start what a refusal cut off by a crash left in failed/, and decides those files again', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    await t.daemon.stop();
    const failed = (kind: string): string => join(t.spool, 'failed', kind);
    for (const kind of ['labels', 'events']) await mkdir(failed(kind), { recursive: true });
    // Refused at claim time; the crash came after its report was written, before the file moved.
    const refused = randomUUID();
    await writeFile(join(t.spool, 'labels', `${refused}.pdf`), 'not a pdf');
    await writeFile(join(failed('labels'), `${refused}.pdf.error.json`), JSON.stringify({ code: 'LABEL_NOT_PDF', message: 'cut off' }));
    await writeFile(join(failed('labels'), `.${refused}.pdf.error.json.999999.tmp`), '{"code":"LAB');
    // In flight and being dead-lettered when the crash came; its job is gone, so it is sent again.
    const inFlight = randomUUID();
    const pdf = await makePdf('in flight');
    const claim = `${contentIdOf(pdf)}-0badc0de`;
    await mkdir(join(t.spool, '.inflight', 'labels'), { recursive: true });
    await writeFile(join(t.spool, '.inflight', 'labels', `${claim}~${inFlight}.pdf`), pdf);
    await writeFile(join(failed('labels'), `${inFlight}.pdf.error.json`), JSON.stringify({ code: 'API_REJECTED', message: 'cut off', claim }));
    // A finished events file's bad-lines report: its file was archived long ago. It stays.
    await writeFile(join(failed('events'), 'old.ndjson.error.json'), JSON.stringify({ code: 'EVENT_BAD_RECORD', claim: 'fedcba9876543210-76543210' }));

    await t.restart();
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 1 && (await filesUnder(failed('labels'))).includes(`${refused}.pdf`), {
      what: 'both files decided again',
    });
    expect(await filesUnder(failed('labels'))).toEqual([`${refused}.pdf`, `${refused}.pdf.error.json`].sort());
    expect(JSON.parse(await readFile(join(failed('labels'), `${refused}.pdf.error.json`), 'utf8'))).toMatchObject({
      code: 'LABEL_NOT_PDF',
      file: `${refused}.pdf`,
    });
    expect(t.sandbox.state.deliveries.get(inFlight)?.label?.sha256).toBe(sha(pdf));
    expect(await filesUnder(failed('events'))).toEqual(['old.ndjson.error.json']);
    expect(await filesUnder(join(t.spool, '.inflight'))).toEqual([]);
  });

  it('recovers from injected 5xx and socket resets without losing or repeating a file', async () => {
    running = await startTestDaemon({
      sandbox: { autoCreateDeliveries: true, faults: { errorRate: 0.3, resetRate: 0.1 } },
      settings: { delivery: { maxAttempts: 20, backoffMs: 20 } },
    });
    const t = running;
    const ids = Array.from({ length: 20 }, () => randomUUID());
    for (const id of ids) await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf(id));
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === ids.length, { timeoutMs: 60_000, what: 'all archived' });
    const accepted = labelRequests(t).map((r) => r.deliveryId);
    expect(new Set(accepted).size).toBe(ids.length);
    expect(accepted).toHaveLength(ids.length);
    expect(t.sandbox.requests().some((r) => r.fault === 'error')).toBe(true);
  });

  it('dead-letters permanent refusals, then replays them once the cause is fixed', async () => {
    running = await startTestDaemon();
    const t = running;
    const unknown = randomUUID();
    const cancelled = t.sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id;
    await writeFile(join(t.spool, 'labels', `${unknown}.pdf`), await makePdf('u'));
    await writeFile(join(t.spool, 'labels', `${cancelled}.pdf`), await makePdf('c'));
    await waitFor(async () => (await filesUnder(join(t.spool, 'failed'))).length === 4, { what: 'two dead letters in failed/' });
    const notFound = JSON.parse(await readFile(join(t.spool, 'failed', 'labels', `${unknown}.pdf.error.json`), 'utf8')) as Record<string, unknown>;
    expect(notFound).toMatchObject({ code: 'API_NOT_FOUND', apiCode: 'DELIVERY_NOT_FOUND', status: 404, attempts: 2 });
    const refused = JSON.parse(await readFile(join(t.spool, 'failed', 'labels', `${cancelled}.pdf.error.json`), 'utf8')) as Record<string, unknown>;
    expect(refused).toMatchObject({ code: 'API_REJECTED', status: 400, attempts: 1 });
    expect(JSON.stringify(notFound)).not.toContain(Object.values(t.sandbox.keys.carriers)[0]);

    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
    try {
      // The file moves with the outcome; BullMQ moves the job to failed a round trip after it.
      const letters = await waitFor(
        async () => {
          const listed = await listDeadLetters(ctx);
          return listed.length === 2 ? listed : null;
        },
        { what: 'both dead letters listed' },
      );
      expect(letters.map((l) => l.deliveryId).sort()).toEqual([unknown, cancelled].sort());
      expect(letters.find((l) => l.deliveryId === unknown)).toMatchObject({ kind: 'label', apiCode: 'DELIVERY_NOT_FOUND', attempts: 2 });
      // Fix the cause: the delivery now exists at the API. Replay it.
      t.sandbox.state.addDelivery({ id: unknown });
      const id = letters.find((l) => l.deliveryId === unknown)!.id;
      expect((await retryDeadLetters(ctx, [id])).retried).toEqual([id]);
    } finally {
      await ctx.closers.closeAll();
    }
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).some((f) => f.endsWith(`${unknown}.pdf`)), { what: 'the replayed file archived' });
    expect(t.sandbox.state.deliveries.get(unknown)?.label).not.toBeNull();
    expect(await readdir(join(t.spool, 'failed', 'labels'))).toEqual([`${cancelled}.pdf`, `${cancelled}.pdf.error.json`]);
  });

  it('keeps the outcomes of identical bytes dropped for two deliveries apart', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const good = randomUUID();
    const cancelled = t.sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id;
    const pdf = await makePdf('same bytes');
    await writeFile(join(t.spool, 'labels', `${good}.pdf`), pdf);
    await writeFile(join(t.spool, 'labels', `${cancelled}.pdf`), pdf);
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 1 && (await filesUnder(join(t.spool, 'failed'))).length === 2, {
      what: 'one archived, one refused',
    });
    expect((await filesUnder(join(t.spool, 'archive')))[0]).toMatch(new RegExp(`${good}\\.pdf$`));
    expect(await readdir(join(t.spool, 'failed', 'labels'))).toEqual([`${cancelled}.pdf`, `${cancelled}.pdf.error.json`]);
  });

  it('works in polling mode (network shares without inotify)', async () => {
    running = await startTestDaemon({
      sandbox: { autoCreateDeliveries: true },
      settings: { spool: { usePolling: true, pollIntervalMs: 100, rescanIntervalMs: 60_000 } },
    });
    const t = running;
    const id = randomUUID();
    await writeFile(join(t.spool, 'labels', `${id}.pdf`), await makePdf('polled'));
    await waitFor(() => labelRequests(t).length === 1, { what: 'the polled file sent' });
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).length === 1, { what: 'archived' });
  });
});
