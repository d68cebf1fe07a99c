/**
 * The seeded plan of the interleavings test (test/e2e/interleavings.test.ts): a list of abstract
 * operations drawn by fast-check from one seed. The plan is a pure function of the seed (and of
 * fast-check's version); the test interprets it against what it dropped so far, so the same seed
 * drops the same files with the same contents and mtime order. What the daemons do meanwhile (which
 * process claims what, when a fault hits) is not determined by the seed: the sandbox draws its faults
 * from Math.random and the processes run concurrently.
 */
import fc from 'fast-check';

/** When a new version of a document is dropped, relative to the previous one. */
export type Timing = 'quick' | 'after-accepted';

export interface FaultProfile {
  errorRate: number;
  resetRate: number;
  latencyMs: number;
  latencyJitterMs: number;
}

export type PlanOp =
  /** A new delivery's first label; `plain`: named `<id>.pdf`, else `<id>__REV-1.pdf`. */
  | { op: 'label-new'; isValid: boolean; plain: boolean }
  /** The next version of an existing delivery's label. A plain name re-uses `<id>.pdf` (a name clash). */
  | { op: 'label-next'; pick: number; isValid: boolean; plain: boolean; timing: Timing }
  /** 2–3 versions of one delivery's label, `gapMs` apart, without waiting on anything (issue 11's case). */
  | { op: 'label-burst'; pick: number; isNew: boolean; count: number; gapMs: number }
  /** A new delivery's CT-e, `<id>.xml`. */
  | { op: 'cte-new'; isValid: boolean }
  /** The next version of a delivery's CT-e: the same name, dropped once the previous one left the inbox. */
  | { op: 'cte-next'; pick: number; isValid: boolean; timing: Timing }
  /** An identical re-drop (same name, same bytes) of a delivery's newest valid document. */
  | { op: 'redrop'; kind: 'labels' | 'cte'; pick: number }
  /** An events file. Records pick a delivery (an existing one, or a new one when pick lands past the end) and one of 8 instants of it. */
  | {
      op: 'events';
      format: 'ndjson' | 'csv';
      records: Array<{ pick: number; instant: number; offset: number }>;
      invalidLines: number;
      /** Re-use the name of an earlier events file (a name clash), when there is one. */
      clash: boolean;
      /** A name the daemon refuses (`.txt`): the file goes to failed/. */
      badName: boolean;
    }
  /**
   * An events file written in place by a writer that appends: `first` records, then `rest` more
   * appended to the open file, either once the file was claimed (`afterClaim`) or `gapMs` later —
   * before or after the claim's read, by chance. The API answers 429 meanwhile, so the file's batch
   * cannot end before the append (an append after the file's move is what no look can see).
   */
  | { op: 'events-append'; first: number; rest: number; afterClaim: boolean; gapMs: number }
  | { op: 'faults'; faults: FaultProfile }
  /** kill -9 one daemon (the longest running one when `oldest`), then start a new one on the spool. */
  | { op: 'kill9'; victim: number; oldest: boolean }
  /** Lets time pass between operations (part of the workload's schedule, not a synchronisation). */
  | { op: 'pause'; ms: number };

export interface Plan {
  seed: number;
  faults: FaultProfile;
  ops: PlanOp[];
}

const pick = fc.nat({ max: 1_000_000 });
/** true 9 times in 10. */
const mostlyValid = fc.integer({ min: 0, max: 9 }).map((n) => n < 9);
const timing: fc.Arbitrary<Timing> = fc.constantFrom<Timing>('quick', 'quick', 'after-accepted');

/** 5xx up to 35 % (with maxAttempts 25 a valid item is practically never dead-lettered), resets up to 8 %. */
export const faultProfile: fc.Arbitrary<FaultProfile> = fc.record({
  errorRate: fc.integer({ min: 5, max: 35 }).map((n) => n / 100),
  resetRate: fc.integer({ min: 0, max: 8 }).map((n) => n / 100),
  latencyMs: fc.integer({ min: 0, max: 20 }),
  latencyJitterMs: fc.integer({ min: 0, max: 120 }),
});

const planOp: fc.Arbitrary<PlanOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('label-new' as const), isValid: mostlyValid, plain: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('label-next' as const),
      pick,
      isValid: mostlyValid,
      plain: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      timing,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('label-burst' as const),
      pick,
      isNew: fc.boolean(),
      count: fc.integer({ min: 2, max: 3 }),
      gapMs: fc.integer({ min: 0, max: 150 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('cte-new' as const), isValid: mostlyValid }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('cte-next' as const), pick, isValid: mostlyValid, timing }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('redrop' as const), kind: fc.constantFrom('labels' as const, 'cte' as const), pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('events' as const),
      format: fc.constantFrom('ndjson' as const, 'ndjson' as const, 'csv' as const),
      records: fc.array(fc.record({ pick, instant: fc.integer({ min: 0, max: 7 }), offset: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 12 }),
      invalidLines: fc.integer({ min: 0, max: 4 }).map((n) => (n >= 3 ? n - 2 : 0)),
      clash: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      badName: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('events-append' as const),
      first: fc.integer({ min: 1, max: 4 }),
      rest: fc.integer({ min: 1, max: 4 }),
      afterClaim: fc.boolean(),
      gapMs: fc.integer({ min: 0, max: 300 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('faults' as const), faults: faultProfile }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('kill9' as const), victim: pick, oldest: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 600 }) }) },
);

/** The plan of one seed: `length` operations (default 60). */
export function planFor(seed: number, length = 60): Plan {
  const [drawn] = fc.sample(fc.tuple(faultProfile, fc.array(planOp, { minLength: length, maxLength: length })), { seed, numRuns: 1 });
  if (drawn === undefined) throw new Error(`fast-check drew no plan for seed ${seed}`);
  return { seed, faults: drawn[0], ops: drawn[1] };
}

/**
 * The seeds to run: INTERLEAVE_SEEDS (how many, default 1) consecutive seeds from INTERLEAVE_SEED.
 * Without INTERLEAVE_SEED: `fallback.count` seeds from `fallback.first` (what CI runs).
 */
export function seedsFromEnv(env: NodeJS.ProcessEnv, fallback: { first: number; count: number }): number[] {
  const isSeedGiven = (env['INTERLEAVE_SEED'] ?? '') !== '';
  const first = intOf(env['INTERLEAVE_SEED'], fallback.first, 'INTERLEAVE_SEED');
  const count = intOf(env['INTERLEAVE_SEEDS'], isSeedGiven ? 1 : fallback.count, 'INTERLEAVE_SEEDS');
  return Array.from({ length: count }, (_, i) => first + i);
}

export function intOf(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, not ${JSON.stringify(text)}`);
  return value;
}
