/**
 * Randomized interleavings (issue 11): 1–3 daemon processes share one spool and one Redis prefix
 * against the sandbox with faults (5xx, socket resets, latency), while a seeded plan drops labels,
 * CT-e and events files — several versions of one delivery's document in quick succession and after
 * acceptance, identical re-drops, name clashes, invalid files, events files a writer appends to after
 * a pause — and kill -9s a random process (or the
 * longest running one) and starts a new one. At the end the sandbox and the spool are checked
 * against a model of what was dropped (test/support/interleave-model.ts):
 *  - each delivery holds its newest valid label and CT-e (newest: latest mtime; every drop gets a
 *    strictly later mtime), and no older label was accepted after a newer one;
 *  - each valid event instant of a delivery was recorded once; of an appended file, the appended
 *    records only when the file was archived (else it is in failed/ with EVENT_FILE_CHANGED);
 *  - each dropped file is exactly once under archive/ (valid ones) or failed/ (invalid ones, with a
 *    full .error.json beside it); nothing in an inbox, in flight, or half-written; no report without
 *    its file except an events file's bad-lines report;
 *  - the processes stop cleanly and no job is left queued, delayed, active or dead-lettered.
 *
 *   INTERLEAVE_SEED   first seed                INTERLEAVE_SEEDS  how many consecutive seeds (default 1)
 *   (neither: DEFAULT_SEEDS, what CI runs)    INTERLEAVE_PROCS  daemon processes on the spool (default 3)
 * `npm run test:interleavings` runs 20 seeds. A failure prints its seed, the command that reruns it,
 * the operations with their times, and the requests and log lines of the deliveries involved.
 */
import { mkdir, open, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, it } from 'vitest';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, type E2eEnv } from '../support/e2e-env.js';
import { intOf, planFor, seedsFromEnv, type PlanOp, type Timing } from '../support/interleave-plan.js';
import {
  Model,
  nctOf,
  resolveAppended,
  sandboxProblems,
  sha256,
  spoolProblems,
  summarizeSpool,
  type DocKind,
  type DocVersion,
  type DroppedFile,
  type SpoolKind,
} from '../support/interleave-model.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

/** Fixed seeds, so CI runs the same interleaving plans every time. */
const DEFAULT_SEEDS = { first: 1, count: 1 };
const SEEDS = seedsFromEnv(process.env, DEFAULT_SEEDS);
const PROCS = Math.max(1, intOf(process.env['INTERLEAVE_PROCS'], 3, 'INTERLEAVE_PROCS'));
/** High enough that the shared limiter never holds the run back. */
const RATE_PER_MINUTE = 6000;
const SETTLE_MS = 60_000;
/** One "after acceptance" wait, and all of them together in one run (a stuck delivery must not stretch the run past its timeout). */
const WAIT_ACCEPTED_MS = 8_000;
const WAIT_ACCEPTED_TOTAL_MS = 30_000;
const WAIT_CLAIMED_MS = 20_000;

let env: E2eEnv | undefined;
afterEach(async () => {
  await killAllDaemons();
  await env?.close().catch(() => undefined);
  env = undefined;
});

describe('randomized interleavings of drops, versions, faults and kill -9 on one spool', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}, ${PROCS} process${PROCS === 1 ? '' : 'es'}`, async () => {
      await runSeed(seed);
    }, 240_000);
  }
});

interface Slot {
  daemon: DaemonProcess;
  startedAt: number;
}

async function runSeed(seed: number): Promise<void> {
  const plan = planFor(seed);
  const t0 = Date.now();
  const opLog: string[] = [];
  const note = (text: string): void => void opLog.push(`+${String(Date.now() - t0).padStart(6)} ms  ${text}`);
  const e = (env = await createE2eEnv({
    sandbox: { autoCreateDeliveries: true, ratePerMinute: RATE_PER_MINUTE, faults: plan.faults },
    settings: { delivery: { maxAttempts: 25, backoffMs: 50, lockMs: 3000, concurrency: 4, notFoundAttempts: 2 } },
  }));
  const daemonEnv = { ...e.env, CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(RATE_PER_MINUTE) };
  const everyDaemon: DaemonProcess[] = [];
  const start = async (): Promise<Slot> => {
    const daemon = spawnDaemon(daemonEnv, { args: e.args('start') });
    everyDaemon.push(daemon);
    await waitUntilStarted(daemon, 30_000);
    note(`process ${daemon.child.pid} started`);
    return { daemon, startedAt: Date.now() };
  };
  note(`faults ${JSON.stringify(plan.faults)}`);
  const slots: Slot[] = [];
  for (let i = 0; i < PROCS; i += 1) slots.push(await start());

  const model = new Model();
  const bytesOf = new Map<string, Buffer>();
  let lastMtimeMs = 0;
  let waitedForAcceptance = 0;
  let counter = 0;
  const seedHex = (seed >>> 0).toString(16).padStart(8, '0');
  const newId = (): string => `${seedHex}-0000-4000-8000-${(counter += 1).toString(16).padStart(12, '0')}`;
  const eventBase = Math.floor(t0 / 60_000) * 60_000 - 3_600_000;

  /** Drops a file as a careful producer does (hidden temp name, then a rename), with a strictly later mtime than every earlier drop. */
  const place = async (kind: SpoolKind, fileName: string, bytes: Buffer): Promise<number> => {
    const inbox = join(e.spool, kind);
    await mkdir(inbox, { recursive: true });
    const mtimeMs = (lastMtimeMs = Math.max(Date.now(), lastMtimeMs + 1));
    const tmp = join(inbox, `.${fileName}.tmp`);
    await writeFile(tmp, bytes);
    await utimes(tmp, new Date(mtimeMs), new Date(mtimeMs));
    await rename(tmp, join(inbox, fileName));
    return mtimeMs;
  };
  /** A name is dropped again only once the earlier file of that name left the inbox (else the producer would overwrite it). */
  const whenNameFree = async (kind: SpoolKind, fileName: string): Promise<void> => {
    const isTaken = async (): Promise<boolean> =>
      stat(join(e.spool, kind, fileName)).then(
        () => true,
        () => false,
      );
    if (!(await isTaken())) return;
    await waitFor(async () => !(await isTaken()), { timeoutMs: WAIT_CLAIMED_MS, what: `${kind}/${fileName} to leave the inbox` });
  };
  const holds = (kind: DocKind, deliveryId: string): string | null => {
    const delivery = e.sandbox.state.deliveries.get(deliveryId);
    if (kind === 'labels') return delivery?.label?.sha256 ?? null;
    return delivery?.cte === null || delivery?.cte === undefined ? null : nctOf(delivery.cte.xml);
  };
  const waitTiming = async (kind: DocKind, deliveryId: string, timing: Timing): Promise<void> => {
    const newest = model.newestValid(kind, deliveryId);
    if (timing !== 'after-accepted' || newest === undefined) return;
    if (waitedForAcceptance >= WAIT_ACCEPTED_TOTAL_MS)
      return note(`  not waiting for REV-${newest.rev} of ${kind}/${deliveryId} to be accepted: ${WAIT_ACCEPTED_TOTAL_MS} ms of such waits spent`);
    const since = Date.now();
    const isAccepted = await waitFor(() => holds(kind, deliveryId) === newest.identity, { timeoutMs: WAIT_ACCEPTED_MS, intervalMs: 50 }).then(
      () => true,
      () => false,
    );
    waitedForAcceptance += Date.now() - since;
    note(
      isAccepted
        ? `  REV-${newest.rev} of ${kind}/${deliveryId} is accepted`
        : `  REV-${newest.rev} of ${kind}/${deliveryId} not accepted within ${WAIT_ACCEPTED_MS} ms; dropping anyway`,
    );
  };

  let nct = 1000;
  const dropDocument = async (kind: DocKind, deliveryId: string, isValid: boolean, plain: boolean): Promise<void> => {
    const rev = new Set(model.versions(kind, deliveryId).map((v) => v.rev)).size + 1;
    let bytes: Buffer;
    let identity: string;
    let fileName: string;
    if (kind === 'labels') {
      fileName = plain ? `${deliveryId}.pdf` : `${deliveryId}__REV-${rev}.pdf`;
      const pdf = await makePdf(`${deliveryId} REV-${rev} seed ${seed}`);
      bytes = isValid ? pdf : rev % 2 === 0 ? pdf.subarray(0, pdf.lastIndexOf('%%EOF')) : Buffer.from(`not a pdf: ${deliveryId} REV-${rev}`);
      identity = sha256(bytes);
    } else {
      fileName = `${deliveryId}.xml`;
      identity = String((nct += 1));
      const xml = isValid
        ? makeCteXml({ nCT: identity })
        : rev % 2 === 0
          ? makeCteXml({ nCT: identity, emitCnpj: '11222333000100' })
          : `<?xml version="1.0"?><CTe><nCT>${identity}</nCT></CTe>`;
      bytes = Buffer.from(xml, 'utf8');
    }
    await whenNameFree(kind, fileName);
    const mtimeMs = await place(kind, fileName, bytes);
    bytesOf.set(identity, bytes);
    const version: DocVersion = { kind, deliveryId, rev, fileName, isValid, identity, mtimeMs };
    model.addDocument(version, { kind, fileName, sha256: sha256(bytes), expect: isValid ? 'archive' : 'failed', hasLinesReport: false });
    note(`drop ${kind}/${fileName} REV-${rev}${isValid ? '' : ' (invalid)'}`);
  };
  const existing = (list: string[], pick: number): string | undefined => (list.length === 0 ? undefined : list[pick % list.length]);
  const newDelivery = (list: string[]): string => {
    const id = newId();
    list.push(id);
    return id;
  };

  const run = async (op: PlanOp): Promise<void> => {
    switch (op.op) {
      case 'label-new':
        return dropDocument('labels', newDelivery(model.labelDeliveries), op.isValid, op.plain);
      case 'label-next': {
        const id = existing(model.labelDeliveries, op.pick) ?? newDelivery(model.labelDeliveries);
        await waitTiming('labels', id, op.timing);
        return dropDocument('labels', id, op.isValid, op.plain);
      }
      case 'label-burst': {
        const id = op.isNew ? newDelivery(model.labelDeliveries) : (existing(model.labelDeliveries, op.pick) ?? newDelivery(model.labelDeliveries));
        note(`burst of ${op.count} labels for ${id}, ${op.gapMs} ms apart`);
        for (let i = 0; i < op.count; i += 1) {
          if (i > 0) await delay(op.gapMs);
          await dropDocument('labels', id, true, false);
        }
        return;
      }
      case 'cte-new':
        return dropDocument('cte', newDelivery(model.cteDeliveries), op.isValid, true);
      case 'cte-next': {
        const id = existing(model.cteDeliveries, op.pick) ?? newDelivery(model.cteDeliveries);
        await waitTiming('cte', id, op.timing);
        return dropDocument('cte', id, op.isValid, true);
      }
      case 'redrop': {
        const list = op.kind === 'labels' ? model.labelDeliveries : model.cteDeliveries;
        const candidates = list.filter((id) => model.newestValid(op.kind, id) !== undefined);
        const id = existing(candidates, op.pick);
        const newest = id === undefined ? undefined : model.newestValid(op.kind, id);
        if (newest === undefined) return note(`re-drop of a ${op.kind} document skipped: none valid yet`);
        const bytes = bytesOf.get(newest.identity)!;
        await whenNameFree(op.kind, newest.fileName);
        const mtimeMs = await place(op.kind, newest.fileName, bytes);
        model.addDocument(
          { ...newest, mtimeMs },
          { kind: op.kind, fileName: newest.fileName, sha256: sha256(bytes), expect: 'archive', hasLinesReport: false },
        );
        return note(`re-drop ${op.kind}/${newest.fileName} (identical to REV-${newest.rev})`);
      }
      case 'events': {
        const clashWith = op.clash && !op.badName ? existing(model.eventsNames, op.records[0]?.pick ?? 0) : undefined;
        // A clash keeps the earlier file's format: the daemon reads a file by its extension.
        const format = clashWith?.endsWith('.csv') === true ? 'csv' : clashWith === undefined ? op.format : 'ndjson';
        const fileName = clashWith ?? `ev-${(counter += 1)}.${op.badName ? 'txt' : format}`;
        if (clashWith === undefined && !op.badName) model.eventsNames.push(fileName);
        const records = op.records.map((r) => {
          const index = r.pick % (model.eventDeliveries.length + 1);
          const id = model.eventDeliveries[index] ?? newDelivery(model.eventDeliveries);
          const ms = eventBase + r.instant * 60_000 + model.eventDeliveries.indexOf(id) * 1000;
          const iso = new Date(ms).toISOString();
          const at = r.offset === 0 ? iso : r.offset === 1 ? iso.replace('Z', '+00:00') : `${new Date(ms - 3 * 3_600_000).toISOString().slice(0, -1)}-03:00`;
          return { id, ms, at };
        });
        const invalid = Array.from({ length: op.invalidLines }, (_, i) => ({
          id: model.eventDeliveries[0] ?? newId(),
          at: new Date(eventBase + i * 1000).toISOString().slice(0, 19),
        }));
        const rows = [...records, ...invalid];
        const text =
          format === 'csv'
            ? `delivery_id,event_at\n${rows.map((r) => `${r.id},${r.at}`).join('\n')}\n`
            : `${rows.map((r) => JSON.stringify({ delivery_id: r.id, event_at: r.at })).join('\n')}\n`;
        const bytes = Buffer.from(text, 'utf8');
        await whenNameFree('events', fileName);
        await place('events', fileName, bytes);
        if (!op.badName) for (const r of records) model.addEvent(r.id, r.ms);
        model.dropped.push({
          kind: 'events',
          fileName,
          sha256: sha256(bytes),
          expect: op.badName ? 'failed' : 'archive',
          hasLinesReport: !op.badName && op.invalidLines > 0,
        });
        return note(
          `drop events/${fileName}: ${records.length} records of ${new Set(records.map((r) => r.id)).size} deliveries, ${op.invalidLines} invalid lines${clashWith === undefined ? '' : ' (name clash)'}${op.badName ? ' (bad name)' : ''}`,
        );
      }
      case 'events-append': {
        const fileName = `appended-${(counter += 1)}.ndjson`;
        const deliveryId = newId();
        const records = Array.from({ length: op.first + op.rest }, (_, i) => ({ id: deliveryId, ms: eventBase + i * 60_000 }));
        const lines = records.map((r) => `${JSON.stringify({ delivery_id: r.id, event_at: new Date(r.ms).toISOString() })}\n`);
        const firstText = lines.slice(0, op.first).join('');
        const inbox = join(e.spool, 'events');
        await mkdir(inbox, { recursive: true });
        // A 429 storm holds every send until the append is written (the batch cannot end before it).
        e.sandbox.setFaults({ rateLimitStormUntil: Date.now() + 120_000, stormRetryAfterSec: 1 });
        const writer = await open(join(inbox, fileName), 'wx');
        try {
          await writer.write(firstText);
          if (op.afterClaim) await whenNameFree('events', fileName);
          else await delay(op.gapMs);
          await writer.write(lines.slice(op.first).join(''));
        } finally {
          await writer.close();
          e.sandbox.setFaults({ rateLimitStormUntil: null });
        }
        const file: DroppedFile = { kind: 'events', fileName, sha256: sha256(lines.join('')), expect: 'archive', hasLinesReport: false };
        model.dropped.push(file);
        model.appended.push({ file, first: records.slice(0, op.first), firstBytes: Buffer.byteLength(firstText), rest: records.slice(op.first) });
        return note(`events/${fileName}: ${op.first} records written, ${op.rest} appended ${op.afterClaim ? 'once it was claimed' : `${op.gapMs} ms later`}`);
      }
      case 'faults':
        e.sandbox.setFaults(op.faults);
        return note(`faults ${JSON.stringify(op.faults)}`);
      case 'kill9': {
        const index = op.oldest ? slots.reduce((best, s, i) => (s.startedAt < slots[best]!.startedAt ? i : best), 0) : op.victim % slots.length;
        const victim = slots[index]!.daemon;
        note(`kill -9 process ${victim.child.pid}${op.oldest ? ' (the longest running)' : ''}`);
        victim.kill('SIGKILL');
        await victim.exited;
        slots[index] = await start();
        return;
      }
      case 'pause':
        await delay(op.ms);
        return;
    }
  };

  const problems: string[] = [];
  try {
    for (const op of plan.ops) await run(op);
    note('all operations done; waiting for the spool to settle');
    await waitFor(
      async () => {
        const spool = await summarizeSpool(e.spool);
        return spool.waiting.length === 0 && spool.settled >= model.dropped.length;
      },
      { timeoutMs: SETTLE_MS, intervalMs: 250, what: 'the spool to settle' },
    ).then(
      () => note('settled'),
      async () => {
        const spool = await summarizeSpool(e.spool);
        problems.push(
          `did not settle within ${SETTLE_MS} ms: ${spool.settled}/${model.dropped.length} files under archive/ or failed/; still waiting: ${spool.waiting.join(', ') || 'none'}`,
        );
      },
    );
    // A job a kill -9 cut after its file's outcome was written but before BullMQ marked it done
    // is still active, under its dead process's lock, until the lock runs out (lockMs 3 s) and a
    // live worker's stall check takes it up (it then ends as already accepted). Let the queues go
    // quiet before the stop, so the strict end check below sees jobs stuck for good, not that window.
    await waitFor(
      async () => {
        const now = await runCli(e.args('status', '--json'), { env: daemonEnv, timeoutMs: 30_000 });
        const queues = (JSON.parse(now.stdout) as { queues: Record<string, Record<string, number>> }).queues;
        return Object.values(queues).every((q) => ['waiting', 'delayed', 'active'].every((field) => (q[field] ?? 0) === 0));
      },
      { timeoutMs: 20_000, intervalMs: 500, what: 'the queues to go quiet' },
    ).then(
      () => note('queues quiet'),
      () => note('queues not quiet within 20 s (the end check says which)'),
    );
  } catch (error) {
    problems.push(`the run itself failed: ${(error as Error).stack ?? String(error)}`);
  }

  // Stop every process gracefully, then nothing can change any more.
  for (const { daemon } of slots) daemon.kill('SIGTERM');
  for (const { daemon } of slots) {
    const exit = await Promise.race([daemon.exited, delay(25_000).then(() => null)]);
    if (exit === null) problems.push(`process ${daemon.child.pid} did not exit within 25 s of SIGTERM`);
    else if (exit.code !== 0) problems.push(`process ${daemon.child.pid} exited with ${JSON.stringify(exit)} on SIGTERM`);
  }
  note('stopped');

  const status = await runCli(e.args('status', '--json'), { env: daemonEnv, timeoutMs: 30_000 });
  try {
    const queues = (JSON.parse(status.stdout) as { queues: Record<string, Record<string, number>> }).queues;
    for (const [kind, q] of Object.entries(queues)) {
      for (const field of ['waiting', 'delayed', 'active', 'deadLettered'])
        if ((q[field] ?? 0) !== 0) problems.push(`queue ${kind}: ${q[field]} ${field} at the end`);
    }
  } catch {
    problems.push(`carrier-sync status --json failed: ${status.stderr || status.stdout}`);
  }
  problems.push(...(await resolveAppended(e.spool, model)));
  problems.push(...(await spoolProblems(e.spool, model)));
  problems.push(...sandboxProblems(e.sandbox, model));

  const requests = e.sandbox.requests();
  const summary = {
    seed,
    processes: PROCS,
    files: model.dropped.length,
    labelDeliveries: model.labelDeliveries.length,
    cteDeliveries: model.cteDeliveries.length,
    eventDeliveries: model.eventDeliveries.length,
    kills: plan.ops.filter((op) => op.op === 'kill9').length,
    appended: model.appended.map(({ file }) => file.expect),
    requests: requests.length,
    faults: requests.filter((r) => r.fault !== undefined).length,
    seconds: Math.round((Date.now() - t0) / 100) / 10,
    problems: problems.length,
  };
  console.info(`[interleavings] ${JSON.stringify(summary)}`);
  if (problems.length > 0) throw new Error(failureText(seed, problems, opLog, e, everyDaemon, t0));
}

/** Everything needed to understand and rerun a failed seed. */
function failureText(seed: number, problems: string[], opLog: string[], e: E2eEnv, daemons: DaemonProcess[], t0: number): string {
  const rel = (at: number): string => `+${String(at - t0).padStart(6)} ms`;
  const ids = [...new Set(problems.flatMap((p) => p.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []))].slice(0, 4);
  const details = ids.map((id) => {
    const requests = e.sandbox
      .requests()
      .filter((r) => r.deliveryId === id)
      .map(
        (r) =>
          `  ${rel(r.at)}  ${r.endpoint} ${r.status}${r.fault === undefined ? '' : ` (${r.fault})`}${r.labelSha256 === undefined ? '' : ` label ${r.labelSha256.slice(0, 12)}`}${r.isRepeat === true ? ' repeat' : ''}`,
      );
    const logs = daemons.flatMap((d) =>
      d
        .logs()
        .filter((l) => JSON.stringify(l).includes(id))
        .map(
          (l) =>
            `  ${rel(Number(l.time ?? 0))}  [${d.child.pid}] ${l.msg ?? ''} ${JSON.stringify({ file: l['file'], jobId: l['jobId'], result: l['result'], attempt: l['attempt'], code: l['code'], to: l['to'] })}`,
        ),
    );
    logs.sort();
    const delivery = e.sandbox.state.deliveries.get(id);
    const held = `label ${delivery?.label?.sha256.slice(0, 12) ?? 'none'}${delivery?.label ? ` (received ${delivery.label.received_at}, ${delivery.label.replacements} replacements)` : ''}, CT-e ${delivery?.cte ? `nCT ${nctOf(delivery.cte.xml)} (received ${delivery.cte.received_at}, ${delivery.cte.replacements} replacements)` : 'none'}`;
    return [
      `delivery ${id} — the API holds: ${held}`,
      `delivery ${id} — API requests:`,
      ...requests,
      `delivery ${id} — daemon log lines:`,
      ...logs.slice(0, 40),
    ].join('\n');
  });
  return [
    `interleavings: seed ${seed} with ${PROCS} processes found ${problems.length} problem(s)`,
    `rerun: INTERLEAVE_SEED=${seed} INTERLEAVE_PROCS=${PROCS} TZ=UTC npx vitest run --config test/vitest.config.ts test/e2e/interleavings.test.ts`,
    'problems:',
    ...problems.map((p) => `  - ${p}`),
    'operations:',
    ...opLog.map((line) => `  ${line}`),
    ...details,
  ].join('\n');
}
