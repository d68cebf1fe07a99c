/**
 * The model of the interleavings test: what was dropped, and from that what the sandbox and the
 * spool must hold at the end. The checks return problems (strings) rather than throwing, so that
 * one failing run reports everything it found.
 *
 * The rule checked for documents (issue 11): per delivery and kind, a document with a later mtime
 * (the test gives every drop a strictly later mtime) is newer; the delivery ends holding its newest
 * valid document, and an older label is never accepted after a newer one was.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxHandle } from '../../src/sandbox/server.js';
import { listFiles } from './e2e-env.js';

export type DocKind = 'labels' | 'cte';
export type SpoolKind = DocKind | 'events';
export const SPOOL_KINDS: readonly SpoolKind[] = ['labels', 'cte', 'events'];

export interface DocVersion {
  kind: DocKind;
  deliveryId: string;
  /** 1, 2, … in drop order per delivery and kind (an identical re-drop repeats its version's rev). */
  rev: number;
  fileName: string;
  isValid: boolean;
  /** Labels: sha256 of the PDF. CT-e: the nCT marker. */
  identity: string;
  mtimeMs: number;
}

export interface DroppedFile {
  kind: SpoolKind;
  fileName: string;
  sha256: string;
  /** Where the file must end. */
  expect: 'archive' | 'failed';
  /** An events file with invalid lines: archived, with its bad-lines report left in failed/. */
  hasLinesReport: boolean;
}

/**
 * An events file a writer appended to after a pause: it ends archived with every record sent (the
 * claim read it whole, or a resume after a kill read it again), or in failed/ with
 * EVENT_FILE_CHANGED and only the records the claim read sent (`resolveAppended` decides which, from
 * where it is, before the checks).
 */
export interface AppendedFile {
  file: DroppedFile;
  /** The first write's records and its length in bytes; the records appended after. */
  first: Array<{ id: string; ms: number }>;
  firstBytes: number;
  rest: Array<{ id: string; ms: number }>;
}

export const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
export const nctOf = (xml: string): string | null => /<nCT>(\d+)<\/nCT>/.exec(xml)?.[1] ?? null;

export class Model {
  readonly docs = new Map<string, DocVersion[]>();
  /** delivery id → valid instants (epoch ms) of its events. */
  readonly events = new Map<string, Set<number>>();
  readonly dropped: DroppedFile[] = [];
  readonly labelDeliveries: string[] = [];
  readonly cteDeliveries: string[] = [];
  readonly eventDeliveries: string[] = [];
  readonly eventsNames: string[] = [];
  readonly appended: AppendedFile[] = [];

  versions(kind: DocKind, deliveryId: string): DocVersion[] {
    const key = `${kind}:${deliveryId}`;
    let list = this.docs.get(key);
    if (list === undefined) this.docs.set(key, (list = []));
    return list;
  }

  /** The newest valid version: the valid one with the latest mtime. */
  newestValid(kind: DocKind, deliveryId: string): DocVersion | undefined {
    return this.versions(kind, deliveryId)
      .filter((v) => v.isValid)
      .sort((a, b) => a.mtimeMs - b.mtimeMs)
      .at(-1);
  }

  addDocument(version: DocVersion, file: DroppedFile): void {
    this.versions(version.kind, version.deliveryId).push(version);
    this.dropped.push(file);
  }

  addEvent(deliveryId: string, epochMs: number): void {
    let set = this.events.get(deliveryId);
    if (set === undefined) this.events.set(deliveryId, (set = new Set()));
    set.add(epochMs);
  }
}

/**
 * Where each appended file ended decides what the model expects of it: archived, every record sent;
 * in failed/ (its report's code EVENT_FILE_CHANGED, naming the bytes the claim read), the first
 * write's records sent and the appended ones not. A file under neither is left to `spoolProblems`.
 */
export async function resolveAppended(spool: string, model: Model): Promise<string[]> {
  const problems: string[] = [];
  const files = await listFiles(spool);
  for (const { file, first, firstBytes, rest } of model.appended) {
    const candidates = files.filter((path) => {
      const parts = path.split('/');
      return (parts[0] === 'archive' || parts[0] === 'failed') && parts[1] === 'events' && originalName(parts.at(-1)!) === file.fileName;
    });
    let place: 'archive' | 'failed' | undefined;
    for (const path of candidates) if (sha256(await readFile(join(spool, path))) === file.sha256) place = path.startsWith('archive/') ? 'archive' : 'failed';
    if (place === 'failed') {
      const path = candidates.find((p) => p.startsWith('failed/'))!;
      const report = JSON.parse(await readFile(join(spool, `${path}${REPORT}`), 'utf8').catch(() => '{}')) as { code?: string; message?: string };
      if (report.code !== 'EVENT_FILE_CHANGED')
        problems.push(`${path}: appended to after its read, it is in failed/ with ${JSON.stringify(report.code)}, not EVENT_FILE_CHANGED`);
      else if (report.message?.includes(`${firstBytes} bytes were read`) !== true)
        problems.push(`${path}: its report does not say the ${firstBytes} bytes of the first write were read: ${JSON.stringify(report.message)}`);
    }
    file.expect = place ?? 'archive';
    for (const event of place === 'failed' ? first : [...first, ...rest]) model.addEvent(event.id, event.ms);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Reports

/** The keys every `.error.json` must have, each a non-empty string. Extend here when the report format grows. */
export const REPORT_STRING_KEYS: readonly string[] = ['code', 'message'];

/** Problems of one report's text (empty when it is a full report). */
export function reportProblems(text: string, where: string): string[] {
  let report: unknown;
  try {
    report = JSON.parse(text);
  } catch (error) {
    return [`${where}: the report is not JSON (${(error as Error).message})`];
  }
  if (report === null || typeof report !== 'object' || Array.isArray(report)) return [`${where}: the report is not a JSON object`];
  const record = report as Record<string, unknown>;
  return REPORT_STRING_KEYS.filter((key) => typeof record[key] !== 'string' || record[key] === '').map(
    (key) => `${where}: the report has no ${key} (${JSON.stringify(record[key])})`,
  );
}

// ---------------------------------------------------------------------------------------------
// The spool

const REPORT = '.error.json';

/** `name~3.ext` → `name.ext` (as the daemon names clashes). */
export function originalName(candidate: string): string {
  const match = /^(.*)~\d+(\.[^.~]*)?$/.exec(candidate);
  return match === null ? candidate : `${match[1]}${match[2] ?? ''}`;
}

interface FoundFile {
  place: 'archive' | 'failed';
  kind: SpoolKind;
  path: string;
  name: string;
  sha256: string;
}

export interface SpoolSummary {
  /** Files still in an inbox or in flight. */
  waiting: string[];
  /** Content files under archive/ and failed/ (not reports). */
  settled: number;
}

/** What is still to be decided in the spool, for the settle wait. */
export async function summarizeSpool(spool: string): Promise<SpoolSummary> {
  const waiting: string[] = [];
  for (const kind of SPOOL_KINDS) {
    waiting.push(...(await listFiles(join(spool, kind))).map((f) => `${kind}/${f}`));
    waiting.push(...(await listFiles(join(spool, '.inflight', kind))).map((f) => `.inflight/${kind}/${f}`));
  }
  const archived = await listFiles(join(spool, 'archive'));
  const failed = (await listFiles(join(spool, 'failed'))).filter((f) => !f.endsWith(REPORT));
  return { waiting, settled: archived.length + failed.length };
}

/** Checks the spool against the model: every dropped file once, in its place, with a full report in failed/; nothing else. */
export async function spoolProblems(spool: string, model: Model): Promise<string[]> {
  const problems: string[] = [];
  const all = await listFiles(spool);
  const found: FoundFile[] = [];
  const reports = new Map<string, string>();
  for (const path of all) {
    const parts = path.split('/');
    const name = parts.at(-1) ?? path;
    // The spool's identity file and its holder's record (src/spool/lease/spool-id.ts, holder-file.ts) belong there.
    if (path === '.spool-id' || path === '.holder.json') continue;
    if (name.startsWith('.') || /\.(tmp|part|partial)$/i.test(name)) {
      problems.push(`temporary file left behind: ${path}`);
      continue;
    }
    const [top, kind] = parts as [string, SpoolKind | undefined];
    if (SPOOL_KINDS.includes(top as SpoolKind)) {
      problems.push(`left in the inbox: ${path}`);
    } else if (top === '.inflight') {
      problems.push(`left in flight: ${path}`);
    } else if (top === 'failed' && kind !== undefined && parts.length === 3) {
      if (name.endsWith(REPORT)) reports.set(path, await readFile(join(spool, path), 'utf8'));
      else found.push({ place: 'failed', kind, path, name, sha256: sha256(await readFile(join(spool, path))) });
    } else if (top === 'archive' && kind !== undefined && parts.length === 4) {
      if (name.endsWith('.dead-letter.json')) problems.push(`a dead letter's report was archived (nothing should have been dead-lettered): ${path}`);
      else found.push({ place: 'archive', kind, path, name, sha256: sha256(await readFile(join(spool, path))) });
    } else problems.push(`unexpected file in the spool: ${path}`);
  }

  // Each dropped file exactly once: matched on kind, original name and bytes.
  const unmatched = [...found];
  const take = (file: DroppedFile, place?: 'archive' | 'failed'): FoundFile | undefined => {
    const at = unmatched.findIndex(
      (f) => f.kind === file.kind && originalName(f.name) === file.fileName && f.sha256 === file.sha256 && (place === undefined || f.place === place),
    );
    return at < 0 ? undefined : unmatched.splice(at, 1)[0];
  };
  const missing: DroppedFile[] = [];
  const placed: DroppedFile[] = [];
  for (const file of model.dropped) (take(file, file.expect) === undefined ? missing : placed).push(file);
  for (const file of missing) {
    const elsewhere = take(file);
    if (elsewhere !== undefined)
      problems.push(`${file.kind}/${file.fileName} (sha ${file.sha256.slice(0, 12)}) should be under ${file.expect}/ but is at ${elsewhere.path}`);
    else problems.push(`${file.kind}/${file.fileName} (sha ${file.sha256.slice(0, 12)}) was dropped but is under neither archive/ nor failed/`);
  }
  for (const extra of unmatched) problems.push(`${extra.path} is one file too many (dropped fewer times than found, or never dropped)`);

  // failed/: every file with its full report beside it; a report without its file only for an events file's bad lines.
  for (const file of found.filter((f) => f.place === 'failed')) {
    const text = reports.get(`${file.path}${REPORT}`);
    if (text === undefined) problems.push(`${file.path} is in failed/ without its ${REPORT}`);
    else problems.push(...reportProblems(text, `${file.path}${REPORT}`));
  }
  const linesReports = new Map<string, number>();
  for (const file of model.dropped.filter((f) => f.hasLinesReport)) linesReports.set(file.fileName, (linesReports.get(file.fileName) ?? 0) + 1);
  for (const [path, text] of reports) {
    const filePath = path.slice(0, -REPORT.length);
    if (found.some((f) => f.path === filePath)) continue;
    const [, kind, name] = path.split('/') as [string, string, string];
    const fileName = originalName(name.slice(0, -REPORT.length));
    const left = linesReports.get(fileName) ?? 0;
    if (kind === 'events' && left > 0) {
      linesReports.set(fileName, left - 1);
      problems.push(...reportProblems(text, path));
    } else problems.push(`${path} is a report without its file`);
  }
  for (const [fileName, left] of linesReports) if (left > 0) problems.push(`events/${fileName}: ${left} bad-lines report(s) missing from failed/events/`);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The sandbox

/** Checks the API's final state and request log against the model. */
export function sandboxProblems(sandbox: SandboxHandle, model: Model): string[] {
  const problems: string[] = [];
  const requests = sandbox.requests();
  for (const [key, versions] of model.docs) {
    const [kind, deliveryId] = key.split(':') as [DocKind, string];
    const newest = model.newestValid(kind, deliveryId);
    const delivery = sandbox.state.deliveries.get(deliveryId);
    const held = kind === 'labels' ? (delivery?.label?.sha256 ?? null) : delivery?.cte === null || delivery?.cte === undefined ? null : nctOf(delivery.cte.xml);
    const describe = (identity: string | null): string => {
      if (identity === null) return 'nothing';
      const revs = versions.filter((v) => v.identity === identity).map((v) => v.rev);
      return revs.length === 0
        ? `an unknown document (${identity.slice(0, 12)})`
        : `REV-${Math.max(...revs)} (${versions.find((v) => v.identity === identity)?.fileName})`;
    };
    const what = kind === 'labels' ? 'label' : 'CT-e';
    if (newest === undefined) {
      if (held !== null) problems.push(`${what} of ${deliveryId}: no valid version was dropped, but the API holds ${describe(held)}`);
      continue;
    }
    if (held !== newest.identity) {
      const heldRev = versions.find((v) => v.identity === held)?.rev;
      const older = heldRev !== undefined && heldRev < newest.rev ? ' — AN OLDER VERSION OVERWROTE THE NEWER ONE' : '';
      problems.push(`${what} of ${deliveryId}: the API holds ${describe(held)}, the newest valid version is REV-${newest.rev} (${newest.fileName})${older}`);
    }
    if (kind === 'labels') {
      // The accepted labels in the order the API took them: never an older one after a newer one.
      const revOf = (sha: string): number | undefined => versions.find((v) => v.identity === sha)?.rev;
      let highest = 0;
      for (const request of requests.filter((r) => r.endpoint === 'label' && r.status === 200 && r.deliveryId === deliveryId && r.labelSha256 !== undefined)) {
        const rev = revOf(request.labelSha256!) ?? 0;
        if (rev < highest) problems.push(`label of ${deliveryId}: REV-${rev} was accepted (request #${request.seq}) after REV-${highest} had been accepted`);
        highest = Math.max(highest, rev);
      }
    }
  }
  for (const [deliveryId, instants] of model.events) {
    const recorded = (sandbox.state.deliveries.get(deliveryId)?.events ?? []).map((e) => Date.parse(e.event_at)).sort((a, b) => a - b);
    const expected = [...instants].sort((a, b) => a - b);
    const iso = (list: number[]): string => list.map((ms) => new Date(ms).toISOString()).join(', ');
    if (recorded.join() !== expected.join()) problems.push(`events of ${deliveryId}: recorded [${iso(recorded)}], expected each of [${iso(expected)}] once`);
  }
  return problems;
}
