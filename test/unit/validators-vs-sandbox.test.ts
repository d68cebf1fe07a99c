/**
 * Our validators against the sandbox's own, independent reading of the contract, on random and
 * mutated input: whatever carrier-sync accepts and would send, the sandbox accepts too. (The
 * reverse need not hold: carrier-sync refuses more, e.g. bad check digits or encrypted PDFs.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLabel as sandboxLabel } from '../../src/sandbox/label-check.js';
import { readCte } from '../../src/sandbox/cte-check.js';
import { parseInstant } from '../../src/sandbox/event-time.js';
import { checkCte, checkLabel, parseEventAt } from '../../src/validate/index.js';
import { SyncError } from '../../src/errors.js';
import { makeCteXml, makePdf } from '../support/builders.js';

const RUNS = { numRuns: 200 };

/** A byte string mutated by flips, cuts and insertions. */
function mutated(base: Uint8Array): fc.Arbitrary<Uint8Array> {
  return fc
    .array(fc.tuple(fc.nat({ max: base.length - 1 }), fc.integer({ min: 0, max: 3 }), fc.uint8Array({ minLength: 1, maxLength: 8 })), { maxLength: 4 })
    .map((edits) => {
      let bytes = Buffer.from(base);
      for (const [at, kind, junk] of edits) {
        const i = Math.min(at, bytes.length - 1);
        if (kind === 0) bytes[i] = bytes[i]! ^ junk[0]!;
        else if (kind === 1) bytes = bytes.subarray(0, i);
        else if (kind === 2) bytes = Buffer.concat([bytes.subarray(0, i), junk, bytes.subarray(i)]);
        else bytes = Buffer.concat([bytes, junk]);
        if (bytes.length === 0) bytes = Buffer.from(' ');
      }
      return new Uint8Array(bytes);
    });
}

describe('carrier-sync never accepts what the sandbox refuses', () => {
  it('labels', async () => {
    const base = await makePdf('property');
    await fc.assert(
      fc.asyncProperty(mutated(base), async (bytes) => {
        const verdict = await checkLabel(bytes, { maxBytes: 1 << 20 });
        // What is sent is the verdict's bytes (cut after %%EOF), not the file as dropped.
        if (verdict.ok) expect(sandboxLabel(Buffer.from(verdict.value.pdf).toString('base64')).isPdf).toBe(true);
        else expect(verdict.error).toBeInstanceOf(SyncError);
      }),
      RUNS,
    );
  });

  it('CT-e', async () => {
    const base = new Uint8Array(Buffer.from(makeCteXml()));
    await fc.assert(
      fc.property(mutated(base), (bytes) => {
        const verdict = checkCte(bytes, { maxBytes: 1 << 20 });
        if (verdict.ok) expect(readCte(verdict.value.xml)).not.toHaveProperty('problem');
        else expect(verdict.error).toBeInstanceOf(SyncError);
      }),
      RUNS,
    );
  });

  it('event_at', () => {
    const piece = fc.oneof(
      fc.constantFrom('2026-01-31T23:59:59', '2026-02-29T10:00', '2024-02-29T00:00:00.123456789', '1999-12-31t23:59:60'),
      fc.string({ maxLength: 30 }),
    );
    const offset = fc.constantFrom('Z', 'z', '+00:00', '-03:00', '+0530', '+14:00', '+25:00', '', '-0000');
    fc.assert(
      fc.property(piece, offset, (time, zone) => {
        const parsed = parseEventAt(time + zone);
        if (parsed instanceof SyncError) return;
        expect(parseInstant(parsed.wire)).not.toBeNull();
        // The same instant for both readings, to the nanosecond where we carry it.
        expect((BigInt(parsed.epochMs) * 1_000_000n) / 1_000_000n).toBe(parseInstant(parsed.wire)! / 1_000_000n);
      }),
      { numRuns: 500 },
    );
  });
});
