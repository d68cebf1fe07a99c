/**
 * A folded journey's compact record (journey/journey-compact-record.ts) read back: each item's
 * milestones keep their times, file, path and version; a dead-lettered CT-e its last code; an
 * event its event_at; a path the short form cannot hold is kept whole. And which journeys count as
 * settled (journey-compact.ts `isSettled`).
 */
import { describe, expect, it } from 'vitest';
import { publicSteps } from '../../src/journey/journey-read.js';
import { compactRecord, compactSteps } from '../../src/journey/journey-compact-record.js';
import { isSettled } from '../../src/journey/journey-compact.js';
import { DAY_MS, epochDayOf, type StoredStep } from '../../src/journey/journey.js';

const at = Date.UTC(2026, 10, 25, 8, 0, 0);
const day = epochDayOf(at);
const line = (offsetMs: number, step: StoredStep): string => JSON.stringify({ t: at + offsetMs, ...step });
const SHA_A = 'a1'.repeat(32);
const SHA_C = 'c3'.repeat(32);

/** Steps as they read before and after the fold, without the fields a fold drops (a folded milestone names its item's file, where the detail may not). */
const milestones = (steps: ReturnType<typeof publicSteps>): Array<Record<string, unknown>> =>
  steps
    .filter((s) => !['claimed', 'valid', 'queued', 'attempt', 'folded'].includes(s.step))
    .map((s) => ({ at: s.at, step: s.step, kind: s.kind, ...(s.path === undefined ? {} : { path: s.path }) }));

describe('compact record', () => {
  it("reads back a delivery's label, dead-lettered CT-e and event: milestones with their times, then what was folded", () => {
    const lines = [
      line(0, { k: 'l', s: 'seen', f: 'D1__ORD-7.pdf', h: SHA_A, z: 1834, m: at, w: 'host-a/41' }),
      line(5, { k: 'l', s: 'queued', f: 'D1__ORD-7.pdf', h: SHA_A.slice(0, 8), g: '1.1' }),
      line(10, { k: 'l', s: 'attempt', h: SHA_A.slice(0, 8), a: 'aaaaaa', n: 1, w: 'host-a/41' }),
      line(20, { k: 'l', s: 'answer', a: 'aaaaaa', st: 503, ms: 9 }),
      line(30_000, { k: 'l', s: 'attempt', h: SHA_A.slice(0, 8), a: 'bbbbbb', n: 2, w: 'host-b/7' }),
      line(30_100, { k: 'l', s: 'answer', a: 'bbbbbb', st: 200, ms: 90 }),
      line(30_110, { k: 'l', s: 'accepted', h: SHA_A.slice(0, 8) }),
      line(30_200, { k: 'l', s: 'archived', h: SHA_A.slice(0, 8), to: 'archive/labels/2026-11-25/' }),
      line(40_000, { k: 'c', s: 'seen', f: 'D1.xml', h: SHA_C, z: 700, m: at, w: 'host-a/41' }),
      line(40_010, { k: 'c', s: 'attempt', h: SHA_C.slice(0, 8), a: 'cccccc', n: 1, w: 'host-a/41' }),
      line(40_020, { k: 'c', s: 'answer', a: 'cccccc', st: 404, c: 'API_NOT_FOUND', ac: 'DELIVERY_NOT_FOUND', r: 'Delivery not found', ms: 5 }),
      line(40_030, { k: 'c', s: 'dead-lettered', h: SHA_C.slice(0, 8), c: 'API_NOT_FOUND', ac: 'DELIVERY_NOT_FOUND' }),
      // A path the short form cannot hold (an "@" in it) is kept as it was.
      line(40_040, { k: 'c', s: 'failed', h: SHA_C.slice(0, 8), to: 'failed/ctes/odd@dir/D1.xml' }),
      line(50_000, { k: 'e', s: 'received', i: 'abc001', e: '2026-11-25T07:00:00-03:00', src: 'file', f: 'ev.ndjson', l: 3 }),
      line(50_010, { k: 'e', s: 'attempt', i: 'abc001', a: 'dddddd', n: 1, w: 'host-a/41' }),
      line(50_020, { k: 'e', s: 'answer', a: 'dddddd', st: 200, ms: 4 }),
      line(50_030, { k: 'e', s: 'accepted', i: 'abc001' }),
    ];
    const detail = publicSteps('D1', lines);
    const record = compactRecord('D1', detail, day);
    expect(record.startsWith('~')).toBe(true);
    expect(record.split('\n')).toHaveLength(3);
    const folded = compactSteps('D1', record, day);

    expect(milestones(folded)).toEqual(milestones(detail));
    const label = folded.filter((s) => s.kind === 'label');
    expect(label.map((s) => s.step)).toEqual(['seen', 'accepted', 'archived', 'folded']);
    expect(label[0]).toMatchObject({ sha256: SHA_A.slice(0, 12), size: 1834, file: 'D1__ORD-7.pdf', compacted: true });
    expect(label[2]?.path).toBe('archive/labels/2026-11-25/D1__ORD-7.pdf');
    expect(label[3]).toMatchObject({ folded: ['claimed', 'valid', 'queued', 'attempt'], attempt: 2, status: 200 });

    const cte = folded.filter((s) => s.kind === 'cte');
    expect(cte.map((s) => s.step)).toEqual(['seen', 'dead-lettered', 'failed', 'folded']);
    expect(cte[2]?.path).toBe('failed/ctes/odd@dir/D1.xml');
    expect(cte[3]).toMatchObject({ attempt: 1, status: 404, apiCode: 'DELIVERY_NOT_FOUND' });

    const event = folded.filter((s) => s.kind === 'collecting');
    expect(event.map((s) => s.step)).toEqual(['received', 'accepted', 'folded']);
    expect(event[0]).toMatchObject({ event_at: '2026-11-25T07:00:00-03:00', file: 'ev.ndjson' });
    expect(folded.every((s) => s.at.startsWith(new Date(day * DAY_MS).toISOString().slice(0, 10)))).toBe(true);
  });

  it('keeps the name of a folded step that has no letter of its own', () => {
    const detail = publicSteps('D4', [
      line(0, { k: 'l', s: 'seen', f: 'D4.pdf', h: SHA_A, z: 1, m: at, w: 'h/1' }),
      line(5, { k: 'l', s: 'paused', h: SHA_A.slice(0, 8) }),
      line(20, { k: 'l', s: 'archived', h: SHA_A.slice(0, 8), to: 'archive/labels/2026-11-25/' }),
    ]);
    const only = publicSteps('D5', [line(5, { k: 'l', s: 'paused', h: SHA_A.slice(0, 8) })]);
    expect(compactSteps('D4', compactRecord('D4', detail, day), day).at(-1)?.folded).toEqual(['claimed', 'valid', 'paused']);
    expect(compactSteps('D5', compactRecord('D5', only, day), day).at(-1)?.folded).toEqual(['paused']);
  });

  it('counts a journey settled only when every item ended: a file moved, an event sent', () => {
    const archived = publicSteps('D2', [
      line(0, { k: 'l', s: 'seen', f: 'D2.pdf', h: SHA_A, z: 1, m: at, w: 'h/1' }),
      line(10, { k: 'l', s: 'accepted', h: SHA_A.slice(0, 8) }),
      line(20, { k: 'l', s: 'archived', h: SHA_A.slice(0, 8), to: 'archive/labels/2026-11-25/' }),
    ]);
    expect(isSettled(archived)).toBe(true);
    // Accepted, its file not moved yet: the outcome is still to come.
    expect(isSettled(archived.slice(0, -1))).toBe(false);
    const eventHeld = publicSteps('D3', [
      line(0, { k: 'e', s: 'received', i: 'abc002', e: '2026-11-25T09:00:00Z', src: 'enqueue' }),
      line(5, { k: 'e', s: 'held', i: 'abc002', d: at + DAY_MS }),
    ]);
    expect(isSettled(eventHeld)).toBe(false);
    expect(isSettled([...archived, ...eventHeld])).toBe(false);
  });
});
