/**
 * `carrier-sync history` (the built binary) against a real daemon run: a label re-dropped in a
 * newer version while the older one was retrying (superseded), an identical re-drop, a dead letter
 * replayed with `dlq retry`, a file refused locally, and an event duplicate — each looked up by
 * delivery, by file name, by sha256 and by time range.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JourneyStep } from '../../src/journey/journey-read.js';
import { createLogger } from '../../src/log.js';
import { openContext, type Context } from '../../src/runtime/context.js';
import { makePdf } from '../support/builders.js';
import { promoteDelayed, startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { listFiles } from '../support/e2e-env.js';
import { runCli, type CliResult } from '../support/process.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { compactJourneys } from '../../src/journey/journey-compact.js';
import { deadLetterDeliveries } from '../../src/queue/dead-letter.js';
import { DAY_MS } from '../../src/journey/journey.js';

let t: TestDaemon;
const startedAt = new Date(Date.now() - 1000).toISOString();
const sha = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

const ids = { revised: '', deadLetter: '', refused: 'REFUSED-0001', events: '', held: randomUUID() };
let rev1: Buffer = Buffer.alloc(0);
let rev2: Buffer = Buffer.alloc(0);

async function drop(inbox: string, name: string, bytes: Buffer | string): Promise<void> {
  const temp = join(inbox, `.${name}.part`);
  await writeFile(temp, bytes);
  await rename(temp, join(inbox, name));
}

async function history(...args: string[]): Promise<CliResult> {
  const result = await runCli(['history', ...args], {
    env: { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: t.prefix, CARRIER_SYNC_API_URL: t.sandbox.url, CARRIER_SYNC_CARRIER_KEY: 'unused-here' },
    timeoutMs: 15_000,
  });
  expect(result.stdout + result.stderr).not.toContain(Object.values(t.sandbox.keys.carriers)[0]);
  return result;
}

function ndjson(result: CliResult): JourneyStep[] {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JourneyStep);
}

const stepsOf = (steps: readonly JourneyStep[], file?: string): string[] => steps.filter((s) => file === undefined || s.file === file).map((s) => s.step);

beforeAll(async () => {
  // Retries wait 30 s unless the test brings them forward (promoteRetries): REV-1's retry must come
  // after REV-2 is queued, whatever the machine's load.
  t = await startTestDaemon({ sandbox: { autoCreateDeliveries: false }, settings: { delivery: { backoffMs: 30_000 } } });
  const labels = join(t.spool, 'labels');
  const events = join(t.spool, 'events');

  // A label whose first version is answered 503, then a newer version is dropped: the older one's
  // retry ends superseded.
  ids.revised = t.sandbox.state.addDelivery().id;
  rev1 = await makePdf('REV-1');
  rev2 = await makePdf('REV-2');
  t.sandbox.setFaults({ errorRate: 1 });
  await drop(labels, `${ids.revised}__REV-1.pdf`, rev1);
  await waitFor(() => t.sandbox.requests().some((r) => r.endpoint === 'label' && r.status === 503), { what: "REV-1's first attempt answered 503" });
  t.sandbox.setFaults({ errorRate: 0 });
  await drop(labels, `${ids.revised}__REV-2.pdf`, rev2);
  await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1, { what: 'REV-2 archived', timeoutMs: 20_000 });
  await waitFor(async () => (await promoteRetries()) > 0, { what: "REV-1's retry brought forward" });
  await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 2, { what: 'both versions archived', timeoutMs: 20_000 });
  // The newest version dropped again, byte for byte: not sent again.
  await drop(labels, `${ids.revised}__REV-2.pdf`, rev2);

  // A label for a delivery the API does not know (yet): dead-lettered.
  ids.deadLetter = randomUUID();
  await drop(labels, `${ids.deadLetter}.pdf`, await makePdf('dead letter'));
  // A truncated PDF: refused locally.
  await drop(labels, `${ids.refused}.pdf`, await readFile('test/fixtures/labels/bad-no-eof.pdf'));
  // One collecting event, then the same instant in another offset from a second file.
  ids.events = t.sandbox.state.addDelivery().id;
  await drop(events, 'first.ndjson', `${JSON.stringify({ delivery_id: ids.events, event_at: '2026-11-25T01:00:00Z' })}\n`);
  await waitFor(async () => (await listFiles(join(t.spool, 'archive', 'events'))).length === 1, { what: 'first events file archived' });
  await drop(events, 'again.ndjson', `${JSON.stringify({ delivery_id: ids.events, event_at: '2026-11-24T22:00:00-03:00' })}\n`);

  await waitFor(
    async () => {
      await promoteRetries(); // the dead letter's second 404
      return (await listFiles(join(t.spool, 'archive'))).length === 5 && (await listFiles(join(t.spool, 'failed', 'labels'))).length === 4;
    },
    {
      what: 'the re-drop and the second events file archived; the dead letter and the refused file in failed/ with their reports',
      timeoutMs: 30_000,
    },
  );
}, 90_000);

afterAll(async () => {
  await ctx?.closers.closeAll();
  await t?.stop();
});

let ctx: Context | undefined;
/** Runs the label retries waiting in delayed now (as their backoff would, later); returns how many. */
async function promoteRetries(): Promise<number> {
  ctx ??= await openContext(t.config, createLogger({ level: 'silent' }), 'test-history');
  return promoteDelayed(ctx.queues.items.label);
}

describe('carrier-sync history <delivery_id>', () => {
  it('tells a re-dropped newer version: the older one tried (503), superseded by the newer, which was accepted; the identical re-drop not sent', async () => {
    const steps = ndjson(await history(ids.revised, '--json'));
    const older = `${ids.revised}__REV-1.pdf`;
    const newer = `${ids.revised}__REV-2.pdf`;
    expect(stepsOf(steps, older).slice(0, 4)).toEqual(['seen', 'claimed', 'valid', 'queued']);
    const firstAttempt = steps.find((s) => s.file === older && s.step === 'attempt');
    expect(firstAttempt).toMatchObject({ status: 503, attempt: 1, kind: 'label', delivery_id: ids.revised });
    expect(typeof firstAttempt?.host).toBe('string');
    expect(firstAttempt?.pid).toBe(process.pid);
    expect(steps.find((s) => s.file === older && s.step === 'superseded')?.supersededBy).toBe(newer);
    expect(steps.find((s) => s.file === older && s.step === 'seen')?.sha256).toBe(sha(rev1));
    expect(stepsOf(steps, older)).toContain('archived');
    expect(stepsOf(steps, older)).not.toContain('accepted');
    // The newer one: accepted, then the identical re-drop decided without a request.
    const newerSteps = stepsOf(steps, newer);
    expect(newerSteps).toEqual(expect.arrayContaining(['seen', 'queued', 'attempt', 'accepted', 'archived', 'already-accepted']));
    expect(steps.filter((s) => s.file === newer && s.step === 'attempt')).toEqual([expect.objectContaining({ status: 200 })]);
    expect(steps.find((s) => s.step === 'archived')?.path).toMatch(/^archive\/labels\/\d{4}-\d{2}-\d{2}\//);
    // Oldest first.
    expect([...steps].sort((a, b) => a.at.localeCompare(b.at))).toEqual(steps);
    for (const step of steps) expect(Object.keys(step)).toEqual(expect.arrayContaining(['at', 'delivery_id', 'kind', 'step']));

    const text = await history(ids.revised);
    expect(text.code).toBe(0);
    // The README's sample output comes from here.
    await mkdir('test-artifacts', { recursive: true });
    await writeFile(
      'test-artifacts/history-sample.txt',
      `${text.stdout}\n${(await history(ids.deadLetter)).stdout}\n${(await history(ids.events)).stdout}\n${(await history(ids.deadLetter, '--json')).stdout}`,
    );
    expect(text.stdout).toContain(`delivery ${ids.revised}`);
    expect(text.stdout).toContain(`not sent: superseded by ${newer}`);
    expect(text.stdout).toMatch(/attempt 1 by \S+ pid \d+: HTTP 503/);
    expect(text.stdout).toContain('not sent again: the API holds these bytes already');
  });

  it('tells a dead letter, then its replay from `dlq retry` and its file leaving failed/ for archive/', async () => {
    const before = ndjson(await history(ids.deadLetter, '--json'));
    expect(stepsOf(before)).toEqual(expect.arrayContaining(['seen', 'queued', 'attempt', 'dead-lettered', 'failed']));
    expect(before.find((s) => s.step === 'dead-lettered')).toMatchObject({ apiCode: expect.any(String), status: 404 });
    expect(before.find((s) => s.step === 'failed')?.path).toBe(`failed/labels/${ids.deadLetter}.pdf`);

    t.sandbox.state.addDelivery({ id: ids.deadLetter });
    const retry = await runCli(['dlq', 'retry', '--all'], { env: { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: t.prefix }, timeoutMs: 15_000 });
    expect(retry.code, retry.stderr).toBe(0);
    await waitFor(async () => (await listFiles(join(t.spool, 'archive', 'labels'))).length === 5, { what: 'the replayed label archived', timeoutMs: 20_000 });
    await waitFor(async () => stepsOf(ndjson(await history(ids.deadLetter, '--json'))).includes('archived'), { what: 'the archived step' });
    const after = ndjson(await history(ids.deadLetter, '--json'));
    const tail = stepsOf(after).slice(stepsOf(after).indexOf('replayed'));
    expect(tail).toEqual(['replayed', 'attempt', 'accepted', 'archived']);
    expect(after.find((s) => s.step === 'replayed')?.by).toBe('cli');
    await writeFile('test-artifacts/history-sample-replayed.txt', (await history(ids.deadLetter)).stdout);
  });

  it('tells a file refused locally: seen with its hash, refused with code and reason, moved to failed/', async () => {
    // The move's step is written after the move (journey-files.ts), within a flush.
    const steps = await waitFor(
      async () => {
        const read = ndjson(await history(ids.refused, '--json'));
        return stepsOf(read).includes('failed') ? read : null;
      },
      { what: "the refused file's move in its journey" },
    );
    expect(stepsOf(steps)).toEqual(['seen', 'refused', 'failed']);
    expect(steps[1]).toMatchObject({ code: 'LABEL_TRUNCATED', file: `${ids.refused}.pdf` });
    expect(steps[0]?.sha256).toBe(sha(await readFile('test/fixtures/labels/bad-no-eof.pdf')));
  });

  it('tells an event duplicate: which earlier record took its instant, and no second send', async () => {
    const steps = ndjson(await history(ids.events, '--json', '--kind', 'collecting'));
    expect(stepsOf(steps)).toEqual(['received', 'attempt', 'accepted', 'received', 'duplicate']);
    expect(steps[0]).toMatchObject({ source: 'file', file: 'first.ndjson', line: 1, event_at: '2026-11-25T01:00:00Z' });
    expect(steps[4]?.duplicateOf).toContain('first.ndjson line 1');
    expect(ndjson(await history(ids.events, '--json', '--kind', 'label'))).toEqual([]);
  });

  it('tells an event from `enqueue` whose event_at lies ahead: received from enqueue, held until due', async () => {
    const dueAt = new Date(Date.now() + 3_600_000);
    const enqueue = await runCli(['enqueue', 'collecting', '--delivery-id', ids.held, '--event-at', dueAt.toISOString()], {
      env: { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: t.prefix },
      timeoutMs: 15_000,
    });
    expect(enqueue.code, enqueue.stderr).toBe(0);
    const steps = ndjson(await history(ids.held, '--json'));
    expect(steps).toEqual([
      expect.objectContaining({ step: 'received', source: 'enqueue', kind: 'collecting', event_at: dueAt.toISOString() }),
      expect.objectContaining({ step: 'held', dueAt: dueAt.toISOString() }),
    ]);
  });

  it('says so, exit 0, when nothing is recorded', async () => {
    const result = await history('NO-SUCH-DELIVERY');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('nothing recorded for delivery NO-SUCH-DELIVERY\n');
  });
});

describe('carrier-sync history webhook:<id>', () => {
  it('records a webhook set: what was sent without header values or query, and the answer', async () => {
    const webhookId = 'fb000000-0000-4000-8000-000000000001';
    const carrierKey = Object.values(t.sandbox.keys.carriers)[0] ?? '';
    const set = await runCli(
      ['webhook', 'set', webhookId, '--url', 'https://hooks.example.test/in?token=SECRET-Q', '--header', 'Authorization=Bearer SECRET-H', '--events', 'a,b'],
      {
        env: { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: t.prefix, CARRIER_SYNC_API_URL: t.sandbox.url, CARRIER_SYNC_CARRIER_KEY: carrierKey },
        timeoutMs: 15_000,
      },
    );
    expect(set.code, set.stderr).toBe(0);
    const result = await history(`webhook:${webhookId}`, '--json');
    const steps = ndjson(result);
    expect(steps).toEqual([
      expect.objectContaining({
        kind: 'webhook',
        step: 'webhook-set',
        by: 'cli',
        status: 200,
        sent: 'PATCH url=https://hooks.example.test/in?… headers=[Authorization] events=[a, b]',
      }),
    ]);
    expect(result.stdout).not.toContain('SECRET');
  });
});

describe('carrier-sync history --file / --sha256', () => {
  it('finds a file by its name, and a version by the first hex digits of its sha256', async () => {
    const byName = ndjson(await history('--file', `${ids.revised}__REV-1.pdf`, '--json'));
    expect(new Set(byName.map((s) => s.file))).toEqual(new Set([`${ids.revised}__REV-1.pdf`]));
    expect(stepsOf(byName)).toContain('superseded');
    const byHash = ndjson(await history('--sha256', sha(rev2).slice(0, 10), '--json'));
    expect(new Set(byHash.map((s) => s.file))).toEqual(new Set([`${ids.revised}__REV-2.pdf`]));
    const events = ndjson(await history('--file', 'again.ndjson', '--json'));
    expect(events.map((s) => s.delivery_id)).toContain(ids.events);
    expect(stepsOf(events)).toContain('duplicate');
  });

  it('refuses bad flags with one line and exit 2', async () => {
    for (const args of [
      ['--sha256', 'xyz'],
      ['--since', 'yesterday', '--json'],
      [],
      ['D1', '--file', 'x.pdf'],
      ['D1', '--kind', 'pdf'],
      ['--until', '2026-11-25T00:00:00Z'],
    ]) {
      const result = await history(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });
});

describe('carrier-sync history --since --json', () => {
  it('exports every recorded step of the range, oldest first, complete on a pipe', async () => {
    const all = ndjson(await history('--since', startedAt, '--json'));
    // Every journey this run wrote: the items' deliveries and the webhook set above.
    const journeys = [...Object.values(ids), 'webhook:fb000000-0000-4000-8000-000000000001'];
    const perDelivery = await Promise.all(journeys.map(async (id) => ndjson(await history(id, '--json'))));
    expect(all).toHaveLength(perDelivery.flat().length);
    expect([...all].sort((a, b) => a.at.localeCompare(b.at))).toEqual(all);
    const none = ndjson(await history('--since', '2020-01-01T00:00:00Z', '--until', '2020-01-02T00:00:00Z', '--json'));
    expect(none).toEqual([]);
  });
});

describe('carrier-sync history of a folded journey', () => {
  it("answers by delivery and by sha256 once the settled items are folded, saying which steps' detail is gone (en, pt-BR)", async () => {
    ctx ??= await openContext(t.config, createLogger({ level: 'silent' }), 'test-history');
    const { queues } = ctx;
    // The hourly fold as it runs two days later (history.detailDays 1).
    const result = await compactJourneys(ctx.redis, ctx.keys, {
      retentionDays: 30,
      detailDays: 1,
      nowMs: Date.now() + 2 * DAY_MS,
      deadLetterDeliveries: () => deadLetterDeliveries(queues),
    });
    expect(result.folded).toBeGreaterThanOrEqual(1);

    const newer = `${ids.revised}__REV-2.pdf`;
    const steps = ndjson(await history(ids.revised, '--json'));
    expect(stepsOf(steps, newer)).toEqual(expect.arrayContaining(['seen', 'accepted', 'archived', 'folded']));
    expect(stepsOf(steps, newer)).not.toContain('queued');
    const folded = steps.find((s) => s.file === newer && s.step === 'folded');
    expect(folded).toMatchObject({ compacted: true, status: 200, sha256: sha(rev2).slice(0, 12) });
    expect(folded?.folded).toEqual(expect.arrayContaining(['claimed', 'valid', 'queued', 'attempt']));

    const text = await history(ids.revised);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('detail folded (settled, past the detail window): ');
    const portuguese = await runCli(['history', ids.revised], {
      env: {
        REDIS_URL: testRedisUrl(),
        CARRIER_SYNC_PREFIX: t.prefix,
        CARRIER_SYNC_API_URL: t.sandbox.url,
        CARRIER_SYNC_CARRIER_KEY: 'unused-here',
        CARRIER_SYNC_LANG: 'pt-BR',
      },
      timeoutMs: 15_000,
    });
    expect(portuguese.code, portuguese.stderr).toBe(0);
    expect(portuguese.stdout).toContain('detalhe compactado (concluído, fora da janela de detalhe): ');

    // By sha256: a prefix and the whole hash find the folded version (its full index member is gone).
    for (const wanted of [sha(rev2).slice(0, 8), sha(rev2)]) {
      const found = ndjson(await history('--sha256', wanted, '--json'));
      expect(new Set(found.map((s) => s.delivery_id))).toEqual(new Set([ids.revised]));
      expect(found.map((s) => s.step)).toContain('folded');
      expect(found.every((s) => s.file === newer)).toBe(true);
    }
  });
});
