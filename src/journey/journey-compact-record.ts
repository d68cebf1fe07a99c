/**
 * A folded journey's compact record (journey-compact.ts folds, journey-read.ts reads): the day's
 * hash field's value, `~` first (a stored step line starts with `{`), one line an item (kind,
 * version or instant), `|`-separated:
 *   kind code | sha256 (12 hex) | size | requests | last HTTP status | last code | path it went to |
 *   file name (`=`: `<delivery id>.pdf`) | event_at | milestones (`<code><ms since the one before, the
 *   first since the day's start, base 36>`, comma-separated) | folded steps (one letter each; with a
 *   name that has no letter, comma-separated and a comma at the end)
 * ~57 characters a label (~150 bytes of Redis with its field) where its 7 steps took ~700.
 */
import { DAY_MS, KIND_CODE, KIND_OF_CODE, type JourneyKind, type StoredStep } from './journey.js';
import type { JourneyStep } from './journey-step.js';

/** An item in a delivery's public steps: kind and version (documents) or instant (events). */
export function itemOf(step: JourneyStep): string {
  return `${step.kind}:${step.sha256?.slice(0, 8) ?? ''}:${step.event_at ?? ''}`;
}

/** Step names ↔ one-letter codes in a compact record (a name without a code is kept as it is). */
const STEP_CODE: Readonly<Record<string, string>> = {
  seen: 'S',
  claimed: 'c',
  valid: 'v',
  refused: 'X',
  queued: 'q',
  received: 'r',
  held: 'h',
  attempt: 't',
  resent: 's',
  duplicate: 'd',
  superseded: 'U',
  'already-accepted': 'a',
  accepted: 'A',
  'dead-lettered': 'D',
  replayed: 'P',
  archived: 'R',
  failed: 'F',
};
const STEP_OF_CODE: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(STEP_CODE).map(([name, code]) => [code, name]));

/** Steps a folded item keeps, with their time: what a person asks of an old item (when seen, when sent, where its file went). */
const MILESTONES = new Set([
  'seen',
  'received',
  'refused',
  'duplicate',
  'superseded',
  'already-accepted',
  'accepted',
  'dead-lettered',
  'replayed',
  'archived',
  'failed',
]);

const clean = (text: string | undefined): string => (text ?? '').replace(/[|\n,]/g, ' ');

/** The compact record of one delivery's steps of `day` (public form), one line an item. */
export function compactRecord(deliveryId: string, steps: readonly JourneyStep[], day: number): string {
  const items = new Map<string, JourneyStep[]>();
  for (const step of steps) {
    const key = itemOf(step);
    const list = items.get(key) ?? [];
    list.push(step);
    items.set(key, list);
  }
  const lines: string[] = [];
  for (const item of items.values()) {
    const first = item[0]!;
    const of = <K extends keyof JourneyStep>(name: K): JourneyStep[K] | undefined => item.find((s) => s[name] !== undefined)?.[name];
    const attempts = item.filter((s) => s.step === 'attempt');
    const lastAnswer = attempts.at(-1);
    const lastCoded = [...item].reverse().find((s) => s.apiCode !== undefined || s.code !== undefined);
    const moved = [...item].reverse().find((s) => (s.step === 'archived' || s.step === 'failed') && s.path !== undefined);
    const file = of('file');
    // Milestone times: the first from the day's start, each next one from the one before (a few base-36 digits).
    let previous = day * DAY_MS;
    const milestones = item
      .filter((s) => MILESTONES.has(s.step))
      .map((s) => {
        const at = Date.parse(s.at);
        const text = `${STEP_CODE[s.step] ?? 'S'}${(at - previous).toString(36)}`;
        previous = at;
        return text;
      });
    const folded = [...new Set(item.filter((s) => !MILESTONES.has(s.step)).map((s) => STEP_CODE[s.step] ?? clean(s.step)))];
    lines.push(
      [
        KIND_CODE[first.kind as keyof typeof KIND_CODE] ?? 'l',
        of('sha256')?.slice(0, 12) ?? '',
        of('size') ?? '',
        attempts.length === 0 ? '' : attempts.length,
        lastAnswer?.status ?? '',
        clean(lastCoded?.apiCode ?? lastCoded?.code),
        clean(moved === undefined ? undefined : shortPath(moved, file)),
        file === `${deliveryId}.pdf` ? '=' : clean(file),
        clean(of('event_at')),
        milestones.join(','),
        // One letter a step (a name without a code: comma-separated).
        folded.every((code) => code.length === 1) ? folded.join('') : `${folded.join(',')},`,
      ].join('|'),
    );
  }
  return `~${lines.join('\n')}`;
}

/**
 * Where a moved file went, short: without the `archive/` or `failed/` its step names, its day (the
 * step's UTC date) as `@`, its name when it ends the path. `archive/labels/2026-11-28/<id>.pdf`
 * is kept as `labels/@/`.
 */
function shortPath(moved: JourneyStep, file: string | undefined): string | undefined {
  let path = moved.path;
  if (path === undefined || path.includes('@') || path.startsWith('!')) return path === undefined ? undefined : `!${path}`;
  if (file !== undefined && path.endsWith(`/${file}`)) path = path.slice(0, -file.length);
  const root = moved.step === 'archived' ? 'archive/' : 'failed/';
  path = path.startsWith(root) ? path.slice(root.length) : `!${path}`;
  return path.replace(`/${moved.at.slice(0, 10)}/`, '/@/');
}

/** `shortPath` undone. */
function fullPath(path: string, step: string, at: string, file: string | undefined): string {
  const whole = path.startsWith('!') ? path.slice(1) : `${step === 'archived' ? 'archive/' : 'failed/'}${path.replace('/@/', `/${at.slice(0, 10)}/`)}`;
  return whole.endsWith('/') && file !== undefined ? `${whole}${file}` : whole;
}

/** A compact record (a day's hash field's value starting with `~`) as public steps: its milestones, then what was folded. */
export function compactSteps(deliveryId: string, value: string, day: number): JourneyStep[] {
  const out: JourneyStep[] = [];
  for (const line of value.slice(1).split('\n')) {
    const [k = 'l', sha = '', size = '', requests = '', status = '', code = '', path = '', file = '', eventAt = '', milestones = '', folded = ''] =
      line.split('|');
    const kind: JourneyKind = KIND_OF_CODE[k as StoredStep['k']] ?? 'label';
    const facts: Partial<JourneyStep> = {
      ...(file === '' ? {} : { file: file === '=' ? `${deliveryId}.pdf` : file }),
      ...(sha === '' ? {} : { sha256: sha }),
      ...(eventAt === '' ? {} : { event_at: eventAt }),
    };
    let lastMs = day * DAY_MS;
    let lastAt = new Date(lastMs).toISOString();
    for (const milestone of milestones === '' ? [] : milestones.split(',')) {
      const name = STEP_OF_CODE[milestone.slice(0, 1)];
      const delta = parseInt(milestone.slice(1), 36);
      if (name === undefined || Number.isNaN(delta)) continue;
      lastMs += delta;
      lastAt = new Date(lastMs).toISOString();
      out.push({
        at: lastAt,
        delivery_id: deliveryId,
        kind,
        step: name,
        ...facts,
        ...(name === 'seen' && size !== '' ? { size: Number(size) } : {}),
        ...((name === 'archived' || name === 'failed') && path !== '' ? { path: fullPath(path, name, lastAt, facts.file) } : {}),
        compacted: true,
      });
    }
    out.push({
      at: lastAt,
      delivery_id: deliveryId,
      kind,
      step: 'folded',
      ...facts,
      folded: (folded.includes(',') ? folded.split(',').filter((code) => code !== '') : [...folded]).map((code) => STEP_OF_CODE[code] ?? code),
      ...(requests === '' ? {} : { attempt: Number(requests) }),
      ...(status === '' ? {} : { status: Number(status) }),
      ...(code === '' ? {} : { apiCode: code }),
      compacted: true,
    });
  }
  return out;
}

/** A folded file in the day's packed sha256 index: shard = its first 2 hex, line = hex 3–12 and the delivery id. */
export function packedShaEntry(sha256: string, deliveryId: string): { shard: string; line: string } {
  return { shard: sha256.slice(0, 2), line: `${sha256.slice(2, 12)}${deliveryId}\n` };
}
