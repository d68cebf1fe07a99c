/**
 * Collecting events end to end: three ways in (spool file, POST /events, the enqueue path the CLI
 * uses), one path after; dedup on event_at across all of them; future events held; per-delivery
 * order; bad lines reported. Assertions read the sandbox's own request log.
 */
import { randomUUID } from 'node:crypto';
import { open, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { enqueueEvents } from '../../src/queue/enqueue.js';
import { collectingJobOf } from '../../src/store/payloads.js';
import { openContext } from '../../src/runtime/context.js';
import { startDaemon } from '../../src/runtime/start.js';
import { checkEventRecord } from '../../src/validate/event-record.js';
import { readRefusals } from '../../src/store/activity.js';
import { asReason, renderReason } from '../../src/i18n/reason.js';
import { readEventsFileRecords } from '../../src/journey/events-file-lines.js';
import { renderHistoryPage } from '../../src/ops/history-page.js';
import { runCli } from '../support/process.js';
import { testRedisUrl } from '../support/redis.js';
import { say } from '../../src/i18n/translate.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const sent = (t: TestDaemon) => t.sandbox.requests().filter((r) => r.endpoint === 'collecting' && r.status === 200);
const accepted = (t: TestDaemon) => sent(t).filter((r) => r.isRepeat !== true);
const ndjson = (rows: Array<{ delivery_id: string; event_at: string }>): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

async function enqueueLikeCli(t: TestDaemon, deliveryId: string, eventAt: string): Promise<'queued' | 'duplicate'> {
  const verdict = checkEventRecord({ delivery_id: deliveryId, event_at: eventAt });
  if (!verdict.ok) throw verdict.error;
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-cli');
  try {
    const result = await enqueueEvents(ctx.enqueueDeps, [collectingJobOf(verdict.value, `cli:${randomUUID()}`, { source: 'cli' }, new Date().toISOString())]);
    return result.duplicates.length > 0 ? 'duplicate' : 'queued';
  } finally {
    await ctx.closers.closeAll();
  }
}

async function statsOf(t: TestDaemon): Promise<Awaited<ReturnType<Awaited<ReturnType<typeof openContext>>['stats']['read']>>> {
  const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-stats');
  try {
    return await ctx.stats.read();
  } finally {
    await ctx.closers.closeAll();
  }
}

describe('collecting events', () => {
  it('sends one request per instant whatever the offset or precision, across files, HTTP and the CLI path', async () => {
    running = await startTestDaemon({ roles: ['watcher', 'worker', 'http'], sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const a = randomUUID();
    const b = randomUUID();
    await writeFile(
      join(t.spool, 'events', 'batch-1.ndjson'),
      ndjson([
        { delivery_id: a, event_at: '2026-01-10T10:00:00Z' },
        { delivery_id: a, event_at: '2026-01-10T07:00:00-03:00' },
        { delivery_id: a, event_at: '2026-01-10T10:00:00.000000+00:00' },
        { delivery_id: a, event_at: '2026-01-10T10:00:01.5Z' },
        { delivery_id: b, event_at: '2026-01-10T10:00:00Z' },
      ]),
    );
    await waitFor(() => accepted(t).length === 3, { what: '3 distinct instants sent' });
    await writeFile(join(t.spool, 'events', 'batch-2.csv'), `event_at,delivery_id\n2026-01-10T12:00:01.500+02:00,${a}\n2026-01-10T11:00:00Z,${a}\n`);
    await waitFor(async () => (await readdir(join(t.spool, 'archive', 'events'), { recursive: true })).filter((f) => String(f).includes('.')).length === 2, {
      what: 'both files archived',
    });
    const response = await fetch(`${t.daemon.opsUrl()!}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { delivery_id: b, event_at: '2026-01-10T09:00:00-01:00' },
        { delivery_id: b, event_at: '2026-01-10T10:30:00Z' },
      ]),
    });
    expect(response.status).toBe(202);
    const verdicts = (await response.json()) as { results: Array<{ status: string }> };
    expect(verdicts.results.map((r) => r.status)).toEqual(['duplicate', 'queued']);
    expect(await enqueueLikeCli(t, a, '2026-01-10T08:00:00.000-03:00')).toBe('duplicate');
    expect(await enqueueLikeCli(t, a, '2026-01-10T11:30:00Z')).toBe('queued');
    // The API's answers, then their leaves (the sent counter is written in the leave's script, after the answer).
    await waitFor(async () => accepted(t).length === 6 && (await statsOf(t)).sent.collecting === 6, { what: '6 distinct instants sent and recorded' });
    expect(sent(t).filter((r) => r.isRepeat === true)).toEqual([]);
    const stats = await statsOf(t);
    expect(stats.duplicates.collecting).toBe(5);
    expect(stats.sent.collecting).toBe(6);
  });

  it('sends the events of one delivery in event_at order, and reports bad lines without holding back good ones', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const times = ['2026-02-01T10:05:00Z', '2026-02-01T10:01:00Z', '2026-02-01T10:03:00Z', '2026-02-01T10:02:00Z', '2026-02-01T10:04:00Z'];
    const lines = times.map((event_at) => JSON.stringify({ delivery_id: id, event_at }));
    lines.splice(
      2,
      0,
      '{"delivery_id": "x", "event_at": "2026-02-01T10:00:00"}',
      'not json',
      JSON.stringify({ delivery_id: '../etc', event_at: '2026-02-01T10:00:00Z' }),
    );
    await writeFile(join(t.spool, 'events', 'mixed.jsonl'), lines.join('\n'));
    await waitFor(async () => (await readdir(join(t.spool, 'archive', 'events'), { recursive: true })).some((f) => String(f).endsWith('mixed.jsonl')), {
      what: 'the file archived',
    });
    expect(accepted(t).map((r) => r.eventAt)).toEqual([...times].sort().map((s) => s.replace('Z', '.000Z')));
    const report = JSON.parse(await readFile(join(t.spool, 'failed', 'events', 'mixed.jsonl.error.json'), 'utf8')) as {
      invalidLines: Array<{ line: number; code: string }>;
    };
    expect(report.invalidLines.map((l) => [l.line, l.code])).toEqual([
      [3, 'EVENT_BAD_TIME'],
      [4, 'EVENT_BAD_RECORD'],
      [5, 'EVENT_BAD_DELIVERY_ID'],
    ]);
  });

  it('a 36-file drop of NDJSON, JSONL and CSV: every file with an invalid line gets its report, and no event of a misfit CSV row reaches the API (issue 13)', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const valid = new Set<string>();
    const poisoned = new Set<string>();
    const expectedReports = new Map<string, Array<[number, string]>>();
    const fresh = (into: Set<string>): string => {
      const id = randomUUID();
      into.add(id);
      return id;
    };
    const at = (n: number): string => `2026-11-22T04:${String(n % 60).padStart(2, '0')}:26.500Z`;
    const names: string[] = [];
    for (let i = 0; i < 36; i += 1) {
      const format = (['ndjson', 'jsonl', 'csv'] as const)[i % 3]!;
      const hasBadLines = i % 2 === 0;
      const name = `drop-${String(i).padStart(2, '0')}.${format}`;
      names.push(name);
      let text: string;
      if (format === 'csv') {
        // Header variants: extra named column, any order; CRLF and a BOM on some files.
        const eol = i % 4 === 0 ? '\r\n' : '\n';
        const rows = [i % 4 < 2 ? 'event_at,delivery_id' : 'driver_name,delivery_id,event_at'];
        const row = (id: string, n: number): string => (i % 4 < 2 ? `${at(n)},${id}` : `"Silva, J.",${id},${at(n)}`);
        rows.push(row(fresh(valid), i));
        if (hasBadLines) {
          rows.push(`${row(fresh(poisoned), i + 1)},unexpected`); // one field too many: the issue's row
          rows.push(i % 4 < 2 ? at(i + 2) : `Silva, J.,${fresh(poisoned)},${at(i + 2)}`); // too few / an unquoted comma
          expectedReports.set(name, [
            [3, 'EVENT_BAD_RECORD'],
            [4, 'EVENT_BAD_RECORD'],
          ]);
        }
        rows.push(row(fresh(valid), i + 3), row(fresh(valid), i + 4));
        text = `${i % 6 === 0 ? '\uFEFF' : ''}${rows.join(eol)}${eol}`;
      } else {
        const lines = [JSON.stringify({ delivery_id: fresh(valid), event_at: at(i), driver_name: 'Ana' })];
        if (hasBadLines) {
          lines.push(JSON.stringify({ delivery_id: fresh(poisoned), event_at: '2026-11-22T04:46:26' }), JSON.stringify([fresh(poisoned), at(i)]));
          expectedReports.set(name, [
            [2, 'EVENT_BAD_TIME'],
            [3, 'EVENT_BAD_RECORD'],
          ]);
        }
        lines.push(JSON.stringify({ delivery_id: fresh(valid), event_at: at(i + 3) }), JSON.stringify({ event_at: at(i + 4), delivery_id: fresh(valid) }));
        text = `${lines.join('\n')}\n`;
      }
      await writeFile(join(t.spool, 'events', name), text);
    }
    const archived = async (): Promise<string[]> =>
      (await readdir(join(t.spool, 'archive', 'events'), { recursive: true })).map(String).filter((f) => f.includes('.'));
    await waitFor(async () => (await archived()).length === 36, { what: 'all 36 files archived', timeoutMs: 60_000 });
    const failed = (await readdir(join(t.spool, 'failed', 'events'))).sort();
    expect(failed).toEqual([...expectedReports.keys()].map((name) => `${name}.error.json`).sort());
    for (const [name, lines] of expectedReports) {
      const report = JSON.parse(await readFile(join(t.spool, 'failed', 'events', `${name}.error.json`), 'utf8')) as {
        code: string;
        invalidLines: Array<{ line: number; code: string; message: string }>;
      };
      expect(report.code, name).toBe('EVENT_BAD_RECORD');
      expect(
        report.invalidLines.map((l) => [l.line, l.code]),
        name,
      ).toEqual(lines);
      if (name.endsWith('.csv')) expect(report.invalidLines[0]!.message, name).toMatch(/^\d fields, the header has \d;/);
    }
    expect(new Set(accepted(t).map((r) => r.deliveryId))).toEqual(valid);
    expect(accepted(t)).toHaveLength(valid.size);
    expect(t.sandbox.requests().filter((r) => r.deliveryId !== undefined && poisoned.has(r.deliveryId))).toEqual([]);
    expect((await archived()).map((f) => f.split('/').at(-1)).sort()).toEqual([...names].sort());
  });

  it.each(['en', 'pt-BR'] as const)(
    '%s: an events file with no valid record (every line invalid, a CSV split by tabs) goes to failed/events/ with its report, never archive/, and nothing says its records were sent (issue 44)',
    async (lang) => {
      running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, env: { CARRIER_SYNC_LANG: lang } });
      const t = running;
      const id = randomUUID();
      // A "CSV" split by tabs (';' and ',' are read; a tab is not): its header reads as one column.
      await writeFile(join(t.spool, 'events', 'tabs.csv'), `delivery_id\tevent_at\r\n${id}\t2026-11-22T04:46:26Z\r\n`);
      await writeFile(join(t.spool, 'events', 'all-bad.ndjson'), `{"delivery_id":"${id}","event_at":"2026-11-22T04:46:26"}\nnot json\n`);
      // And one with a valid record beside an invalid line: still archived, its lines reported.
      await writeFile(join(t.spool, 'events', 'one-good.ndjson'), `{"delivery_id":"${id}","event_at":"2026-11-22T05:46:26Z"}\nnot json\n`);
      const failedDir = join(t.spool, 'failed', 'events');
      const listFailed = async (): Promise<string[]> => (await readdir(failedDir).catch((): string[] => [])).sort();
      await waitFor(async () => (await listFailed()).filter((name) => !name.endsWith('.error.json')).length === 2, {
        what: 'two events files in failed/events/',
        timeoutMs: 30_000,
      });
      await waitFor(async () => (await readdir(join(t.spool, 'archive'), { recursive: true })).map(String).some((f) => f.endsWith('one-good.ndjson')), {
        what: 'the file with a valid record archived',
      });
      // Its lines report, in failed/, then says where the file went: a write of its own (a temporary
      // file renamed), just after the move. Listed before it ends, failed/ showed the temporary file
      // (a full CI run, four files at once on two busy cores).
      await waitFor(
        async () =>
          ((JSON.parse(await readFile(join(failedDir, 'one-good.ndjson.error.json'), 'utf8')) as { archivedTo: string | null }).archivedTo ?? null) !== null &&
          !(await listFailed()).some((name) => name.endsWith('.tmp')),
        { what: 'the lines report saying where the file went' },
      );
      expect(await listFailed()).toEqual(['all-bad.ndjson', 'all-bad.ndjson.error.json', 'one-good.ndjson.error.json', 'tabs.csv', 'tabs.csv.error.json']);
      const archived = (await readdir(join(t.spool, 'archive'), { recursive: true })).map(String);
      expect(archived.filter((f) => f.endsWith('.csv') || f.endsWith('all-bad.ndjson'))).toEqual([]);
      expect(sent(t).map((r) => r.eventAt)).toEqual(['2026-11-22T05:46:26.000Z']);

      type Report = {
        code: string;
        reason: string;
        message: string;
        accepted: number;
        archivedTo: string | null;
        invalidLines: Array<{ line: number; reason: string }>;
      };
      const read = async (name: string): Promise<Report> => JSON.parse(await readFile(join(failedDir, `${name}.error.json`), 'utf8')) as Report;
      const excel = await read('tabs.csv');
      const allBad = await read('all-bad.ndjson');
      const oneGood = await read('one-good.ndjson');
      const claimsSent = lang === 'en' ? /valid records were sent/ : /registros válidos foram enviados/;
      for (const report of [excel, allBad]) {
        expect(report).toMatchObject({ accepted: 0, archivedTo: null });
        expect(report.reason).not.toMatch(claimsSent);
        expect(report.message).not.toMatch(/valid records were sent/);
        expect(report.reason).toMatch(lang === 'en' ? /no valid record: nothing of the file was sent/ : /nenhum registro válido: nada do arquivo foi enviado/);
      }
      expect(excel.code).toBe('EVENT_BAD_RECORD');
      expect(excel.invalidLines).toHaveLength(1);
      expect(excel.invalidLines[0]!.reason).toMatch(lang === 'en' ? /^the header row is separated by '\\t'/ : /^a linha de cabeçalho está separada por '\\t'/);
      expect(allBad.invalidLines.map((line) => line.line)).toEqual([1, 2]);
      // The file with a valid record: archived, and its report may say so.
      expect(oneGood.archivedTo).toMatch(/^archive\/events\//);
      expect(oneGood.reason).toMatch(claimsSent);

      // The overview's latest refusals and the history's record of the lines say the same, in the reader's language.
      const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-read');
      try {
        const { latest } = await readRefusals(ctx.redis, ctx.keys);
        const row = (file: string): string => renderReason(lang, asReason(latest.find((entry) => entry.file === file)?.reasonSource)!);
        for (const file of ['tabs.csv', 'all-bad.ndjson']) expect(row(file), file).not.toMatch(claimsSent);
        expect(row('one-good.ndjson')).toMatch(claimsSent);
        const [record] = (await readEventsFileRecords(ctx.redis, ctx.keys, 'tabs.csv', 30, Date.now())).invalidLines;
        expect(record?.valid).toBe(0);
        const historyLine = say(lang, record?.valid === 0 ? 'history.invalidLinesNoneValid' : 'history.invalidLines', {
          file: 'tabs.csv',
          at: record?.at ?? '',
          count: record?.count ?? 0,
        });
        expect(historyLine).not.toMatch(claimsSent);
      } finally {
        await ctx.closers.closeAll();
      }
    },
  );

  it('a file a writer appends to after it was read: the records read are sent, the file goes to failed/ saying the rest was not, and dropped again sends only the rest', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const line = (minute: number): string => `${JSON.stringify({ delivery_id: id, event_at: `2026-04-01T10:0${minute}:00Z` })}\n`;
    // The API refuses everything for now (429): the file's batch cannot end before the writer's second write.
    t.sandbox.setFaults({ rateLimitStormUntil: Date.now() + 600_000, stormRetryAfterSec: 1 });
    const writer = await open(join(t.spool, 'events', 'driver-log.ndjson'), 'a');
    try {
      await writer.write(line(1) + line(2));
      // A pause longer than writeStableMs: the file is read and claimed with two lines.
      await waitFor(async () => (await readdir(join(t.spool, '.inflight', 'events'))).some((name) => name.endsWith('driver-log.ndjson')), {
        what: 'the file claimed',
      });
      await writer.write(line(3) + line(4));
    } finally {
      await writer.close();
    }
    t.sandbox.setFaults({ rateLimitStormUntil: null });
    const failedPath = join(t.spool, 'failed', 'events', 'driver-log.ndjson');
    await waitFor(async () => (await readdir(join(t.spool, 'failed', 'events'))).includes('driver-log.ndjson'), { what: 'the file in failed/' });
    const report = JSON.parse(await readFile(`${failedPath}.error.json`, 'utf8')) as { code: string; message: string; accepted: number };
    expect(report.code).toBe('EVENT_FILE_CHANGED');
    expect(report.message).toContain(`${Buffer.byteLength(line(1) + line(2))} bytes were read`);
    expect(report.accepted).toBe(2);
    // The overview's refusals (and the digests that read them) show it, in the reader's language.
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-refusals');
    try {
      const { counts, latest } = await readRefusals(ctx.redis, ctx.keys);
      expect(counts['EVENT_FILE_CHANGED']).toBe(1);
      const entry = latest.find((r) => r.file === 'driver-log.ndjson');
      expect(entry?.code).toBe('EVENT_FILE_CHANGED');
      expect(renderReason('pt-BR', asReason(entry?.reasonSource)!)).toContain('o arquivo mudou depois de lido');
    } finally {
      await ctx.closers.closeAll();
    }
    expect(accepted(t).map((r) => r.eventAt)).toEqual(['2026-04-01T10:01:00.000Z', '2026-04-01T10:02:00.000Z']);
    expect(await readdir(join(t.spool, 'archive', 'events'), { recursive: true }).then((names) => names.filter((n) => String(n).endsWith('.ndjson')))).toEqual(
      [],
    );

    // Dropped again, as the report says: the two later records are sent, the two earlier ones are duplicates.
    await writeFile(join(t.spool, 'events', 'driver-log.ndjson.tmp'), await readFile(failedPath));
    await rename(join(t.spool, 'events', 'driver-log.ndjson.tmp'), join(t.spool, 'events', 'driver-log.ndjson'));
    await waitFor(async () => (await readdir(join(t.spool, 'archive', 'events'), { recursive: true })).some((n) => String(n).endsWith('driver-log.ndjson')), {
      what: 'the file dropped again archived',
    });
    expect(accepted(t).map((r) => r.eventAt)).toEqual(['01', '02', '03', '04'].map((m) => `2026-04-01T10:${m}:00.000Z`));
    expect(sent(t)).toHaveLength(4);
  });

  it('a file a writer appends to after it was archived (the API fast, the batch ended before the next line): moved from archive/ to failed/ saying so', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const line = (minute: number): string => `${JSON.stringify({ delivery_id: id, event_at: `2026-04-02T10:0${minute}:00Z` })}\n`;
    const archived = async (): Promise<string[]> =>
      (await readdir(join(t.spool, 'archive', 'events'), { recursive: true })).map(String).filter((n) => n.endsWith('.ndjson'));
    const writer = await open(join(t.spool, 'events', 'scanner.ndjson'), 'a');
    try {
      await writer.write(line(1));
      await waitFor(async () => (await archived()).length === 1, { what: 'the file archived after its first line' });
      await writer.write(line(2));
    } finally {
      await writer.close();
    }
    await waitFor(async () => (await readdir(join(t.spool, 'failed', 'events'))).includes('scanner.ndjson'), { what: 'the archived file moved to failed/' });
    expect(await archived()).toEqual([]);
    const report = JSON.parse(await readFile(join(t.spool, 'failed', 'events', 'scanner.ndjson.error.json'), 'utf8')) as { code: string; message: string };
    expect(report.code).toBe('EVENT_FILE_CHANGED');
    expect(report.message).toContain(`${Buffer.byteLength(line(1))} bytes were read`);
    expect(accepted(t).map((r) => r.eventAt)).toEqual(['2026-04-02T10:01:00.000Z']);

    // Looked for by its name, the file says it was refused and where it is: its event's own journey says "accepted".
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test-history');
    try {
      const { refusals } = await readEventsFileRecords(ctx.redis, ctx.keys, 'scanner.ndjson', 30, Date.now());
      expect(refusals).toMatchObject([{ file: 'scanner.ndjson', failedAs: 'scanner.ndjson', code: 'EVENT_FILE_CHANGED' }]);
      const view = {
        lookup: { by: 'file', name: 'scanner.ndjson' },
        query: 'scanner.ndjson',
        steps: [],
        retentionDays: 30,
        jsonHref: null,
        fileRefusals: refusals,
        traceUrl: null,
      } as const;
      const page = renderHistoryPage(view, '/ui', 'pt-BR');
      expect(page).toContain('data-events-file-refused="scanner.ndjson"');
      expect(page).toContain('failed/events/scanner.ndjson');
      expect(page).toContain('o arquivo mudou depois de lido');
    } finally {
      await ctx.closers.closeAll();
    }
    for (const [lang, says] of [
      ['en', /file scanner\.ndjson, refused .* \(EVENT_FILE_CHANGED\); it is in failed\/events\/scanner\.ndjson\n {2}the file changed after it was read/],
      ['pt-BR', /arquivo scanner\.ndjson, recusado em .* \(EVENT_FILE_CHANGED\); está em failed\/events\/scanner\.ndjson\n {2}o arquivo mudou depois de lido/],
    ] as const) {
      const cli = await runCli(['history', '--file', 'scanner.ndjson'], {
        env: {
          REDIS_URL: testRedisUrl(),
          CARRIER_SYNC_PREFIX: t.prefix,
          CARRIER_SYNC_API_URL: t.sandbox.url,
          CARRIER_SYNC_CARRIER_KEY: 'unused-here',
          CARRIER_SYNC_LANG: lang,
        },
      });
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(says);
      expect(cli.stdout).toContain('2026-04-02T10:01:00'); // its event's journey is there too
    }
    // --json says it too: a line of its own, in time order after the event's steps.
    const json = await runCli(['history', '--file', 'scanner.ndjson', '--json'], {
      env: { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: t.prefix, CARRIER_SYNC_API_URL: t.sandbox.url, CARRIER_SYNC_CARRIER_KEY: 'unused-here' },
    });
    expect(json.code, json.stderr).toBe(0);
    const steps = json.stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as { at: string; step: string });
    expect(steps.at(-1)).toEqual({
      at: expect.any(String),
      delivery_id: null,
      kind: 'collecting',
      step: 'file-refused',
      file: 'scanner.ndjson',
      path: 'failed/events/scanner.ndjson',
      code: 'EVENT_FILE_CHANGED',
      message: expect.stringContaining('bytes were read'),
    });
    expect(steps.map((step) => step.step)).toContain('accepted');
    expect(steps.map((step) => step.at)).toEqual(steps.map((step) => step.at).sort());
  });

  it('holds an event whose event_at lies in the future until it falls due', async () => {
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const id = randomUUID();
    const due = Date.now() + 1500;
    expect(await enqueueLikeCli(t, id, new Date(due).toISOString())).toBe('queued');
    await waitFor(() => accepted(t).length === 1, { what: 'the future event sent' });
    expect(accepted(t)[0]!.at).toBeGreaterThanOrEqual(due);
  });

  it('never lets two worker processes both send one instant', async () => {
    running = await startTestDaemon({ roles: ['worker'], sandbox: { autoCreateDeliveries: true } });
    const t = running;
    const second = startDaemon(t.config, ['worker'], createLogger({ level: 'silent' }));
    await second.ready;
    try {
      const ids = Array.from({ length: 30 }, () => randomUUID());
      // Every instant is offered twice at once, from two sources, written differently.
      const offers = ids.flatMap((id) => [enqueueLikeCli(t, id, '2026-03-01T12:00:00Z'), enqueueLikeCli(t, id, '2026-03-01T09:00:00.000-03:00')]);
      const verdicts = await Promise.all(offers);
      expect(verdicts.filter((v) => v === 'queued')).toHaveLength(ids.length);
      await waitFor(() => accepted(t).length === ids.length, { what: 'one send per delivery' });
      expect(sent(t)).toHaveLength(ids.length);
    } finally {
      await second.stop();
    }
  });
});
