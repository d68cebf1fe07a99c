/**
 * Reading stored journey records into public steps: an attempt whose answer never came says so;
 * an answer joins its attempt; a superseded document names the newer file; a duplicate names the
 * record that took its instant; a claim record tells seen, claimed and valid.
 */
import { describe, expect, it } from 'vitest';
import { publicSteps } from '../../src/journey/journey-read.js';
import { describeStep } from '../../src/journey/step-text.js';
import { absoluteStepLine } from '../../src/journey/journey.js';
import { eventRef, type StoredStep } from '../../src/journey/journey.js';

const at = Date.UTC(2026, 10, 25, 8, 0, 0);
const line = (offsetMs: number, step: StoredStep): string => JSON.stringify({ t: at + offsetMs, ...step });
const SHA_A = 'a1'.repeat(32);
const SHA_B = 'b2'.repeat(32);

describe('publicSteps', () => {
  it('tells an attempt without an answer (the process died mid-request) as "no answer recorded"', () => {
    const steps = publicSteps('D1', [
      line(0, { k: 'l', s: 'seen', f: 'D1.pdf', h: SHA_A, z: 10, m: at, w: 'host-a/41' }),
      line(5, { k: 'l', s: 'queued', h: SHA_A.slice(0, 8), g: '1.1' }),
      line(10, { k: 'l', s: 'attempt', h: SHA_A.slice(0, 8), a: 'aaaaaa', n: 1, w: 'host-a/41' }),
      line(9000, { k: 'l', s: 'attempt', h: SHA_A.slice(0, 8), a: 'bbbbbb', n: 1, w: 'host-b/7' }),
      line(9100, { k: 'l', s: 'answer', a: 'bbbbbb', st: 200, ms: 90 }),
      line(9110, { k: 'l', s: 'accepted', h: SHA_A.slice(0, 8) }),
    ]);
    expect(steps.map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'attempt', 'accepted']);
    expect(steps[4]).toMatchObject({ answer: 'none', message: 'no answer recorded', host: 'host-a', pid: 41, file: 'D1.pdf', sha256: SHA_A });
    expect(steps[4]?.status).toBeUndefined();
    expect(steps[5]).toMatchObject({ status: 200, durationMs: 90, host: 'host-b', pid: 7 });
    expect(steps[5]?.answer).toBeUndefined();
    expect(describeStep(steps[4]!)).toBe('attempt 1 by host-a pid 41: no answer recorded');
    expect(steps.every((s) => s.delivery_id === 'D1' && s.kind === 'label')).toBe(true);
  });

  it('lists a CT-e queued before its attempt when the worker recorded the attempt first, or in the same millisecond (issue 45)', () => {
    const h = SHA_A.slice(0, 8);
    const written = [
      line(0, { k: 'c', s: 'seen', f: 'D5.xml', h: SHA_A, z: 10, m: at, w: 'host-a/41' }),
      // The worker (another thread) took the job between addBulk and the queued step's round trip.
      line(3, { k: 'c', s: 'attempt', h, a: 'cccccc', n: 1, w: 'host-a/41' }),
      line(4, { k: 'c', s: 'queued', h, g: '1.1' }),
      line(40, { k: 'c', s: 'answer', a: 'cccccc', st: 200, ms: 30 }),
      line(40, { k: 'c', s: 'accepted', h }),
    ];
    expect(publicSteps('D5', written).map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'accepted']);
    // Same millisecond, the queued step appended after the attempt's.
    const sameMs = [written[0]!, line(3, { k: 'c', s: 'attempt', h, a: 'cccccc', n: 1 }), line(3, { k: 'c', s: 'queued', h, g: '1.1' })];
    expect(publicSteps('D5', sameMs).map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt']);
  });

  it('keeps a later duplicate record of a sent instant after the sending, and a received event before its attempt', () => {
    const i = eventRef('2026-11-25T08:00:00.000Z');
    const steps = publicSteps('D6', [
      line(0, { k: 'e', s: 'attempt', i, a: 'eeeeee', n: 1 }),
      line(1, { k: 'e', s: 'received', e: '2026-11-25T05:00:00-03:00', i, src: 'POST /events' }),
      line(20, { k: 'e', s: 'answer', a: 'eeeeee', st: 201, ms: 19 }),
      line(20, { k: 'e', s: 'accepted', i }),
      line(500, { k: 'e', s: 'received', e: '2026-11-25T08:00:00Z', i, src: 'enqueue' }),
      line(500, { k: 'e', s: 'duplicate', e: '2026-11-25T08:00:00Z', i }),
    ]);
    expect(steps.map((s) => s.step)).toEqual(['received', 'attempt', 'accepted', 'received', 'duplicate']);
  });

  it('numbers 401 probes 1, 2, 3 (they spend no attempt), keeping the counted attempt beside', () => {
    const h = SHA_B.slice(0, 8);
    const probes = [1, 2, 3].flatMap((k) => [
      line(k * 1000, { k: 'l', s: 'attempt', h, a: `p${k}p${k}p${k}`, n: 1 }),
      line(k * 1000 + 5, { k: 'l', s: 'answer', a: `p${k}p${k}p${k}`, st: 401, c: 'API_UNAUTHORIZED', ms: 5 }),
    ]);
    const steps = publicSteps('D7', [line(0, { k: 'l', s: 'queued', f: 'D7.pdf', h, g: '1.1' }), ...probes]).filter((s) => s.step === 'attempt');
    expect(steps.map((s) => [s.attempt, s.countedAttempt])).toEqual([
      [1, undefined],
      [2, 1],
      [3, 1],
    ]);
    expect(describeStep(steps[2]!, 'pt-BR')).toMatch(/^tentativa 3\b/);
  });

  it("words an answer of ours kept with its reason (a request that did not leave) in the reader's language; one stored as English text only, as it is", () => {
    const h = SHA_A.slice(0, 8);
    const reason = { key: 'reason.notSent.redisAtGate', values: { error: 'MOVED 1234 10.0.0.1:6379' } };
    const english = "not sent: a Redis error came instead of the gate's answer: MOVED 1234 10.0.0.1:6379";
    const steps = publicSteps('D8', [
      line(0, { k: 'l', s: 'queued', f: 'D8.pdf', h, g: '1.1' }),
      line(10, { k: 'l', s: 'attempt', h, a: 'rrrrrr', n: 2, w: 'host-b/7' }),
      line(10, { k: 'l', s: 'answer', a: 'rrrrrr', ms: 0, r: english, rk: reason }),
      line(20, { k: 'l', s: 'attempt', h, a: 'ssssss', n: 3, w: 'host-b/7' }),
      line(20, { k: 'l', s: 'answer', a: 'ssssss', ms: 0, r: 'not sent: no Redis replica acknowledged the attempt record in time; asking again' }),
    ]).filter((s) => s.step === 'attempt');
    expect(steps[0]).toMatchObject({ message: english, reason });
    expect(describeStep(steps[0]!)).toBe(`attempt 1 by host-b pid 7: ${english} (0 ms)`);
    expect(describeStep(steps[0]!, 'pt-BR')).toBe(
      'tentativa 1 por host-b pid 7: não enviado: veio um erro do Redis em vez da liberação para o envio: MOVED 1234 10.0.0.1:6379 (0 ms)',
    );
    // Written by an earlier version: its English words, as stored.
    expect(describeStep(steps[1]!, 'pt-BR')).toBe(
      'tentativa 2 por host-b pid 7: sem resposta not sent: no Redis replica acknowledged the attempt record in time; asking again (0 ms)',
    );
  });

  it("tells a label's valid step that padding after %%EOF was not sent, and only then", () => {
    const steps = publicSteps('D9', [
      line(0, { k: 'l', s: 'seen', f: 'D9.pdf', h: SHA_A, z: 34_534, m: at, w: 'h/1', p: 20_480 }),
      line(1, { k: 'l', s: 'seen', f: 'D9.pdf', h: SHA_B, z: 14_054, m: at, w: 'h/1' }),
    ]);
    const [padded, plain] = steps.filter((s) => s.step === 'valid');
    expect(padded).toMatchObject({ paddingBytes: 20_480, message: 'sent without 20480 bytes of padding after %%EOF', sha256: SHA_A });
    expect(describeStep(padded!)).toBe('checked: valid; sent without 20480 bytes of padding after %%EOF');
    expect(plain?.paddingBytes).toBeUndefined();
    expect(describeStep(plain!)).toBe('checked: valid');
    expect(steps.filter((s) => s.step === 'seen').every((s) => s.paddingBytes === undefined && s.message === undefined)).toBe(true);
  });

  it('names the newer file that superseded a document, and each version by its own hash', () => {
    const steps = publicSteps('D2', [
      line(0, { k: 'c', s: 'seen', f: 'D2.xml', h: SHA_A, z: 1, m: at, w: 'h/1' }),
      line(1, { k: 'c', s: 'queued', h: SHA_A.slice(0, 8), g: '10.1' }),
      line(2, { k: 'c', s: 'seen', f: 'D2.xml', h: SHA_B, z: 1, m: at, w: 'h/1' }),
      line(3, { k: 'c', s: 'queued', h: SHA_B.slice(0, 8), g: '20.1' }),
      line(4, { k: 'c', s: 'superseded', h: SHA_A.slice(0, 8) }),
    ]);
    const superseded = steps.find((s) => s.step === 'superseded');
    expect(superseded).toMatchObject({ supersededBy: 'D2.xml', sha256: SHA_A, kind: 'cte' });
    expect(steps.filter((s) => s.step === 'queued').map((s) => s.sha256)).toEqual([SHA_A, SHA_B]);
  });

  it('names the earlier record an event duplicate lost to, whatever its offset', () => {
    const i = eventRef('2026-11-25T01:00:00.000Z');
    const steps = publicSteps('D3', [
      line(0, { k: 'e', s: 'received', e: '2026-11-25T01:00:00Z', i, f: 'a.ndjson', l: 3 }),
      line(1, { k: 'e', s: 'attempt', i, a: 'cccccc', n: 1, w: 'h/1' }),
      line(2, { k: 'e', s: 'answer', a: 'cccccc', st: 200, ms: 5 }),
      line(3, { k: 'e', s: 'accepted', i }),
      line(4, { k: 'e', s: 'received', e: '2026-11-24T22:00:00-03:00', i, src: 'POST /events', l: 0 }),
      line(4, { k: 'e', s: 'duplicate', e: '2026-11-24T22:00:00-03:00', i }),
    ]);
    expect(steps.map((s) => [s.step, s.event_at])).toEqual([
      ['received', '2026-11-25T01:00:00Z'],
      ['attempt', '2026-11-25T01:00:00Z'],
      ['accepted', '2026-11-25T01:00:00Z'],
      ['received', '2026-11-24T22:00:00-03:00'],
      ['duplicate', '2026-11-24T22:00:00-03:00'],
    ]);
    expect(steps[4]?.duplicateOf).toMatch(/^a\.ndjson line 3 \(event_at 2026-11-25T01:00:00Z/);
    expect(steps[3]).toMatchObject({ source: 'POST /events' });
  });

  it('skips a record that is not ours rather than failing the journey', () => {
    expect(publicSteps('D4', ['not json', line(0, { k: 'l', s: 'queued', f: 'D4.pdf', h: 'abcdef01' })]).map((s) => s.step)).toEqual(['queued']);
  });
});

describe('absoluteStepLine', () => {
  const day = 20_417; // 2025-11-25
  it('makes a time within the day (what the writers store) epoch ms again', () => {
    expect(absoluteStepLine('{"t":3600000,"k":"l","s":"seen"}', day)).toBe(`{"t":${day * 86_400_000 + 3_600_000},"k":"l","s":"seen"}`);
    expect(absoluteStepLine('{"t":0,"k":"e","s":"received"}', day)).toBe(`{"t":${day * 86_400_000},"k":"e","s":"received"}`);
  });
  it('reads a step written before the change (epoch ms) as it is, and leaves a foreign line alone', () => {
    const old = `{"t":${day * 86_400_000 + 5},"k":"l","s":"seen"}`;
    expect(absoluteStepLine(old, day)).toBe(old);
    expect(absoluteStepLine('not json', day)).toBe('not json');
  });
});
