/**
 * Reading journeys (journey.ts holds the layout): one delivery, the deliveries a file or a hash
 * names, or every step in a time range; and each step in its public form (INTERFACE.md, "History":
 * `at`, `delivery_id`, `kind`, `step`, …), with an attempt's start and answer joined into one
 * `attempt` step — one without an answer says so ("no answer recorded").
 */
import { absoluteStepLine, deliveryOfName, epochDayOf, fileIndexEntry, KIND_OF_CODE, shaIndexEntry, type StoredStep } from './journey.js';
import type { JourneyStep } from './journey-step.js';
import { compactSteps, packedShaEntry } from './journey-compact-record.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';

export type { JourneyStep } from './journey-step.js';

function parse(line: string): StoredStep | null {
  try {
    const step = JSON.parse(line) as StoredStep;
    return typeof step.s === 'string' && typeof step.t === 'number' ? step : null;
  } catch {
    return null;
  }
}

function isoOf(ms: number): string {
  return new Date(ms).toISOString();
}

/** A stored generation's two numbers (base 36: mtime µs, claim µs). */
function generationParts(g: string | undefined): [number, number] {
  const [mtime = '0', claim = '0'] = (g ?? '0.0').split('.');
  return [parseInt(mtime, 36) || 0, parseInt(claim, 36) || 0];
}

function generationAbove(a: string | undefined, b: string | undefined): boolean {
  const [a1, a2] = generationParts(a);
  const [b1, b2] = generationParts(b);
  return a1 !== b1 ? a1 > b1 : a2 > b2;
}

/** As the document order writes it: mtime µs . claim µs, 17 digits each. */
function generationText(g: string): string {
  return generationParts(g)
    .map((n) => String(n).padStart(17, '0'))
    .join('.');
}

function sourceText(step: StoredStep): string {
  if (step.src === 'file' || (step.src === undefined && step.f !== undefined)) return `${step.f ?? '?'} line ${step.l ?? '?'}`;
  return step.src ?? 'unknown source';
}

/** One delivery's stored steps in their public form, oldest first. */
export function publicSteps(deliveryId: string, lines: readonly string[]): JourneyStep[] {
  const stored = causalOrder(lines.flatMap((line) => parse(line) ?? []).sort((a, b) => (a.t ?? 0) - (b.t ?? 0)));
  const known = whatTheStepsSay(stored);
  numberRequests(stored);
  fillIn(stored, known);
  const out: JourneyStep[] = [];
  for (const step of stored) {
    // An answer is shown in its attempt's line (when the attempt was recorded).
    if (step.s === 'answer' && step.a !== undefined && stored.some((s) => s.s === 'attempt' && s.a === step.a)) continue;
    out.push(...publicFormOf(deliveryId, step, known));
  }
  return out;
}

/**
 * Steps an item has before it is sent: written by the process that queued it once the job was
 * added (its own round trip, its own clock), so a worker of another process or thread may record
 * its attempt first, or in the same millisecond (issue 45: `attempt 1 … HTTP 200` before `queued`).
 */
const BEFORE_SEND = new Set(['queued', 'received', 'held']);
/** Steps the push gate writes once the item is on its way (with Redis' clock). */
const SENDING = new Set(['attempt', 'answer', 'resent', 'accepted', 'dead-lettered', 'duplicate', 'superseded']);

/** An item's identity in its delivery's journey: kind and version (documents) or instant (events); an answer's from its attempt. */
function itemKeyOf(step: StoredStep, attemptItems: ReadonlyMap<string, string>): string | undefined {
  if (step.s === 'answer') return step.a === undefined ? undefined : attemptItems.get(step.a);
  if (step.h === undefined && step.i === undefined) return undefined;
  return `${step.k}:${step.h?.slice(0, 8) ?? ''}:${step.i ?? ''}`;
}

/**
 * Time order, then cause: a step from before the item's sending that was recorded after some of its
 * sending steps (since its previous step before sending) moves in front of them. Times are kept as
 * recorded; only the order says what caused what.
 */
function causalOrder(stored: readonly StoredStep[]): StoredStep[] {
  const attemptItems = new Map<string, string>();
  for (const step of stored) {
    const key = step.s === 'attempt' && step.a !== undefined ? itemKeyOf(step, attemptItems) : undefined;
    if (key !== undefined) attemptItems.set(step.a!, key);
  }
  const out: StoredStep[] = [];
  stored.forEach((step, n) => {
    // A record of an instant already taken (received, then duplicate, in one write) caused no sending.
    const next = stored[n + 1];
    const isDuplicate = step.s === 'received' && next?.s === 'duplicate' && next.i === step.i && next.t === step.t;
    const key = BEFORE_SEND.has(step.s) && !isDuplicate ? itemKeyOf(step, attemptItems) : undefined;
    let at = out.length;
    if (key !== undefined) {
      for (let j = out.length - 1; j >= 0; j -= 1) {
        const other = out[j]!;
        if (itemKeyOf(other, attemptItems) !== key) continue;
        if (!SENDING.has(other.s)) break;
        at = j;
      }
    }
    out.splice(at, 0, step);
  });
  return out;
}

/** Each attempt step's request number in its item (`numberRequests`), read when the step is made public. */
const requestNumber = new WeakMap<StoredStep, number>();

/**
 * Numbers each item's requests 1, 2, …: BullMQ's attempt number (`n`) stays the same over a 401
 * probe or a 429, which spend no attempt, so six probes all read `attempt 1` (issue 45). `n` is kept
 * as the counted attempt where it differs.
 */
function numberRequests(stored: StoredStep[]): void {
  const counts = new Map<string, number>();
  for (const step of stored) {
    if (step.s !== 'attempt') continue;
    const key = itemKeyOf(step, new Map()) ?? `attempt:${step.a ?? ''}`;
    const request = (counts.get(key) ?? 0) + 1;
    counts.set(key, request);
    requestNumber.set(step, request);
  }
}

/**
 * What steps tell about each other. A document's steps carry the first 8 hex of its sha256 (its
 * version); its seen step carries all of it, and its seen and queued steps its file's name. An
 * event's steps carry its instant's ref; its received step carries its event_at.
 */
interface Known {
  shaOf: Map<string, string>;
  fileOf: Map<string, string>;
  eventAtOf: Map<string, string>;
  answers: Map<string, StoredStep>;
  /** Per kind code: the newest queued version (what a superseded one gave way to). */
  newestQueued: Map<string, StoredStep>;
  /** Collecting: the first record of each instant that was not itself a duplicate. */
  firstOfInstant: Map<string, StoredStep>;
}

function whatTheStepsSay(stored: readonly StoredStep[]): Known {
  const known: Known = { shaOf: new Map(), fileOf: new Map(), eventAtOf: new Map(), answers: new Map(), newestQueued: new Map(), firstOfInstant: new Map() };
  for (const step of stored) {
    if (step.s === 'seen' && step.h !== undefined && step.h.length === 64) known.shaOf.set(step.h.slice(0, 8), step.h);
    if (step.f !== undefined && step.h !== undefined && !known.fileOf.has(step.h.slice(0, 8))) known.fileOf.set(step.h.slice(0, 8), step.f);
    if (step.s === 'received' && step.i !== undefined && step.e !== undefined && !known.eventAtOf.has(step.i)) known.eventAtOf.set(step.i, step.e);
    if (step.s === 'answer' && step.a !== undefined) known.answers.set(step.a, step);
    if (step.s === 'queued') {
      const best = known.newestQueued.get(step.k);
      if (best === undefined || !generationAbove(best.g, step.g)) known.newestQueued.set(step.k, step);
    }
  }
  stored.forEach((step, n) => {
    if (step.k !== 'e' || step.s !== 'received' || step.i === undefined) return;
    const next = stored.slice(n + 1).find((later) => later.k === 'e' && later.i === step.i);
    if (next?.s !== 'duplicate' && !known.firstOfInstant.has(step.i)) known.firstOfInstant.set(step.i, step);
  });
  return known;
}

/** Steps that carry only a version or an instant's ref get its file name and event_at. */
function fillIn(stored: StoredStep[], known: Known): void {
  for (const step of stored) {
    if (step.f === undefined && step.h !== undefined) {
      const f = known.fileOf.get(step.h.slice(0, 8));
      if (f !== undefined) step.f = f;
    }
    if (step.e === undefined && step.i !== undefined) {
      const e = known.eventAtOf.get(step.i);
      if (e !== undefined) step.e = e;
    }
  }
}

/** One stored step as public steps (a file's seen record is seen, claimed and valid). */
function publicFormOf(deliveryId: string, step: StoredStep, known: Known): JourneyStep[] {
  const base: JourneyStep = {
    at: isoOf(step.t ?? 0),
    delivery_id: deliveryId,
    kind: KIND_OF_CODE[step.k] ?? 'label',
    step: step.s === 'answer' ? 'attempt' : step.s,
  };
  const view = withFacts(base, step, known);
  if (step.s === 'seen' && step.w !== undefined) {
    // A file claimed from an inbox: seen, claimed by this process, found valid (one record).
    const { host, pid, ...seen } = view;
    return [
      seen,
      { ...base, step: 'claimed', ...pick(view, 'file', 'sha256'), host: host ?? '', pid: pid ?? 0 },
      { ...base, step: 'valid', ...pick(view, 'file', 'sha256'), ...paddingOf(step) },
    ];
  }
  return [view];
}

function withFacts(base: JourneyStep, step: StoredStep, known: Known): JourneyStep {
  const sha = step.h === undefined ? undefined : step.h.length === 64 ? step.h : known.shaOf.get(step.h);
  const view: JourneyStep = {
    ...base,
    ...(step.f === undefined ? {} : { file: step.f }),
    ...(sha === undefined || sha === '' ? {} : { sha256: sha }),
    ...(step.e === undefined ? {} : { event_at: step.e }),
    ...(step.z === undefined ? {} : { size: step.z }),
    ...(step.m === undefined ? {} : { mtime: isoOf(step.m) }),
    ...(step.g === undefined ? {} : { generation: generationText(step.g) }),
    ...(step.to === undefined ? {} : { path: step.to.endsWith('/') ? `${step.to}${step.f ?? ''}` : step.to }),
    ...(step.by === undefined ? {} : { by: step.by }),
    ...(step.x === undefined ? {} : { sent: step.x }),
    ...(step.d === undefined ? {} : { dueAt: isoOf(step.d) }),
    ...(step.src === undefined ? (step.s === 'received' && step.f !== undefined ? { source: 'file' } : {}) : { source: step.src }),
    ...(step.l === undefined ? {} : { line: step.l }),
  };
  if (step.w !== undefined) {
    const cut = step.w.lastIndexOf('/');
    view.host = step.w.slice(0, cut);
    view.pid = Number(step.w.slice(cut + 1));
  }
  const request = requestNumber.get(step);
  if (request !== undefined) {
    view.attempt = request;
    if (step.n !== undefined && step.n !== request) view.countedAttempt = step.n;
  } else if (step.n !== undefined) view.attempt = step.n;
  if (step.tr !== undefined) view.trace_id = step.tr;
  addAnswer(view, step, known);
  if (step.s === 'superseded') {
    const newest = known.newestQueued.get(step.k);
    if (newest?.f !== undefined && (newest.f !== step.f || generationAbove(newest.g, step.g))) view.supersededBy = newest.f;
  }
  if (step.s === 'duplicate' && step.i !== undefined && step.r === undefined) {
    const first = known.firstOfInstant.get(step.i);
    if (first !== undefined) {
      view.duplicateOf = `${sourceText(first)} (event_at ${first.e ?? '?'}, ${isoOf(first.t ?? 0)})`;
      const isFile = first.src === 'file' || (first.src === undefined && first.f !== undefined);
      view.duplicateOfRef = {
        ...(isFile ? { file: first.f ?? '?', ...(first.l === undefined ? {} : { line: first.l }) } : { source: first.src ?? '?' }),
        eventAt: first.e ?? '?',
        at: isoOf(first.t ?? 0),
      };
    }
  }
  return view;
}

/** An attempt's answer (or that none came), a refusal's code and reason. */
function addAnswer(view: JourneyStep, step: StoredStep, known: Known): void {
  const answer = step.s === 'attempt' ? (step.a === undefined ? undefined : known.answers.get(step.a)) : step.s === 'answer' ? step : undefined;
  if (step.s === 'attempt' && answer === undefined) {
    view.answer = 'none';
    view.message = 'no answer recorded';
  }
  const facts = answer ?? step;
  if (facts.st !== undefined) view.status = facts.st;
  if (facts.c !== undefined) view.code = facts.c;
  if (facts.ac !== undefined) view.apiCode = facts.ac;
  if (facts.r !== undefined) view.message = facts.r;
  if (facts.rk !== undefined) view.reason = facts.rk;
  if (answer?.ms !== undefined) view.durationMs = answer.ms;
}

/** A label sent without the padding after its %%EOF: how much, in words. */
function paddingOf(step: StoredStep): Pick<JourneyStep, 'paddingBytes' | 'message'> {
  if (step.p === undefined || step.p <= 0) return {};
  return { paddingBytes: step.p, message: `sent without ${step.p} bytes of padding after %%EOF` };
}

function pick(step: JourneyStep, ...names: Array<'file' | 'sha256'>): Partial<JourneyStep> {
  const out: Partial<JourneyStep> = {};
  for (const name of names) if (step[name] !== undefined) out[name] = step[name];
  return out;
}

/** The days a lookup reads: today and the retention before it. */
function daysBack(nowMs: number, retentionDays: number): number[] {
  const today = epochDayOf(nowMs);
  return Array.from({ length: retentionDays + 1 }, (_, i) => today - i);
}

/** Where a lookup reads: the days of the retention, up to today. */
export interface Window {
  retentionDays: number;
  nowMs: number;
}

/** The deliveries' journeys, each over every day of the retention (one pipeline per 500 deliveries). */
export async function readJourneys(redis: RedisConnection, keys: Keys, deliveryIds: readonly string[], window: Window): Promise<Map<string, JourneyStep[]>> {
  const days = daysBack(window.nowMs, window.retentionDays).reverse();
  const out = new Map<string, JourneyStep[]>();
  const CHUNK = 500;
  for (let start = 0; start < deliveryIds.length; start += CHUNK) {
    const ids = deliveryIds.slice(start, start + CHUNK);
    const pipeline = redis.pipeline();
    for (const id of ids) for (const day of days) pipeline.hget(keys.journeyDay(day), id);
    const replies = (await pipeline.exec()) ?? [];
    ids.forEach((id, i) => {
      const lines: string[] = [];
      // Folded days (journey-compact.ts) are older than the days in detail: their steps come first.
      const folded: JourneyStep[] = [];
      for (let d = 0; d < days.length; d += 1) {
        const [error, value] = replies[i * days.length + d] ?? [null, null];
        if (error !== null) throw error;
        if (typeof value !== 'string') continue;
        if (value.startsWith('~')) folded.push(...compactSteps(id, value, days[d]!));
        else for (const line of value.split('\n')) lines.push(absoluteStepLine(line, days[d]!));
      }
      out.set(id, [...folded, ...publicSteps(id, lines)]);
    });
  }
  return out;
}

export async function readJourney(redis: RedisConnection, keys: Keys, deliveryId: string, window: Window): Promise<JourneyStep[]> {
  return (await readJourneys(redis, keys, [deliveryId], window)).get(deliveryId) ?? [];
}

async function lexMembers(redis: RedisConnection, keysOfDays: readonly string[], prefix: string): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (const key of keysOfDays) pipeline.zrangebylex(key, `[${prefix}`, `[${prefix}\xff`);
  const replies = (await pipeline.exec()) ?? [];
  const members = new Set<string>();
  for (const [error, value] of replies) {
    if (error !== null) throw error;
    for (const member of (value ?? []) as string[]) members.add(member);
  }
  return [...members];
}

/** The deliveries with a file of this name in the retention, each with the steps about that file. */
export async function findByFile(
  redis: RedisConnection,
  keys: Keys,
  fileNames: readonly string[],
  retentionDays: number,
  nowMs: number,
): Promise<JourneyStep[]> {
  const days = daysBack(nowMs, retentionDays);
  const deliveries = new Set<string>();
  for (const name of fileNames) {
    // Labels and CT-e: the name carries the delivery (such names are not in the index).
    const named = deliveryOfName(name);
    if (named !== null) deliveries.add(named);
    const { shard, member: entry } = fileIndexEntry(name, '');
    for (const member of await lexMembers(
      redis,
      days.map((d) => keys.journeyFiles(d, shard)),
      entry,
    ))
      deliveries.add(member.slice(entry.length));
    // Recorded before the index was sharded (read for one retention after the upgrade).
    for (const member of await lexMembers(
      redis,
      days.map((d) => keys.journeyFilesUnsharded(d)),
      `${name}\n`,
    ))
      deliveries.add(member.slice(name.length + 1));
  }
  const names = new Set(fileNames);
  const journeys = await readJourneys(redis, keys, [...deliveries], { retentionDays, nowMs });
  return [...journeys.values()].flatMap((steps) => {
    // Events: every step of the events (by event_at) that came from one of these files.
    const instants = new Set(steps.filter((s) => s.kind === 'collecting' && s.step === 'received' && names.has(s.file ?? '')).map((s) => s.event_at));
    return steps.filter((s) => (s.kind === 'collecting' ? instants.has(s.event_at) : names.has(s.file ?? '')));
  });
}

/** The files whose sha256 starts with `prefix` (hex, at least 4 characters), then as `findByFile`. */
export async function findBySha256(redis: RedisConnection, keys: Keys, prefix: string, retentionDays: number, nowMs: number): Promise<JourneyStep[]> {
  const wanted = prefix.toLowerCase();
  const days = daysBack(nowMs, retentionDays);
  const { shard, member: entry } = shaIndexEntry(wanted, '');
  const members = [
    ...(await lexMembers(
      redis,
      days.map((d) => keys.journeyHashes(d, shard)),
      entry.slice(0, -1),
    )),
    // Recorded before the index was sharded (read for one retention after the upgrade).
    ...(await lexMembers(
      redis,
      days.map((d) => keys.journeyHashesUnsharded(d)),
      wanted.slice(0, 16),
    )),
  ];
  const names = [...new Set(members.map((member) => member.slice(member.indexOf('\n') + 1)))];
  // A file name may have held other bytes too (a newer version dropped under the same name): a
  // step that names its version keeps only these bytes'. A folded step keeps 12 hex of it.
  const isThisVersion = (s: JourneyStep): boolean =>
    s.sha256 === undefined || s.sha256.startsWith(wanted) || (s.compacted === true && wanted.startsWith(s.sha256));
  const found = names.length === 0 ? [] : (await findByFile(redis, keys, names, retentionDays, nowMs)).filter(isThisVersion);
  // Folded files (journey-compact.ts): the days' packed index names their deliveries.
  const folded = await foldedBySha256(redis, keys, wanted, days);
  if (folded.length === 0) return found;
  const seen = new Set(found.map((s) => JSON.stringify(s)));
  const more = [...(await readJourneys(redis, keys, folded, { retentionDays, nowMs })).values()]
    .flat()
    .filter((s) => s.compacted === true && s.sha256 !== undefined && isThisVersion(s) && !seen.has(JSON.stringify(s)));
  return [...more, ...found];
}

/** The deliveries of folded files whose sha256 starts with `wanted` (the packed index keeps hex 3–12: a longer prefix is checked on the steps). */
async function foldedBySha256(redis: RedisConnection, keys: Keys, wanted: string, days: readonly number[]): Promise<string[]> {
  const { shard } = packedShaEntry(wanted, '');
  const rest = wanted.slice(2, 12);
  const pipeline = redis.pipeline();
  for (const day of days) pipeline.get(keys.journeyHashesPacked(day, shard));
  const deliveries = new Set<string>();
  for (const [error, value] of (await pipeline.exec()) ?? []) {
    if (error !== null) throw error;
    if (typeof value !== 'string') continue;
    for (const line of value.split('\n')) if (line.length > 10 && line.startsWith(rest)) deliveries.add(line.slice(10));
  }
  return [...deliveries];
}

/**
 * Every step in [sinceMs, untilMs], oldest first (an audit export): the deliveries with a step on
 * the range's days (HSCAN of each day's hash), read whole (a step's file and event come from its
 * earlier steps), then kept to the range.
 */
export async function readRange(redis: RedisConnection, keys: Keys, sinceMs: number, untilMs: number, window: Window): Promise<JourneyStep[]> {
  const deliveries = new Set<string>();
  for (let day = epochDayOf(sinceMs); day <= epochDayOf(untilMs); day += 1) {
    let cursor = '0';
    do {
      const [next, flat] = await redis.hscan(keys.journeyDay(day), cursor, 'COUNT', 1000);
      for (let i = 0; i < flat.length; i += 2) deliveries.add(flat[i]!);
      cursor = next;
    } while (cursor !== '0');
  }
  // Sorted by time, each delivery's causal order kept: a step sorts at the latest time of its
  // delivery's steps up to it (a queued step recorded a few ms after its attempt stays before it).
  const all: Array<{ step: JourneyStep; sortAt: string }> = [];
  for (const steps of (await readJourneys(redis, keys, [...deliveries], window)).values()) {
    let latest = '';
    for (const step of steps) {
      latest = step.at > latest ? step.at : latest;
      const at = Date.parse(step.at);
      if (at >= sinceMs && at <= untilMs) all.push({ step, sortAt: latest });
    }
  }
  return all.sort((a, b) => a.sortAt.localeCompare(b.sortAt)).map(({ step }) => step);
}
