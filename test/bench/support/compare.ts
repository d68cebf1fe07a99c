/**
 * `--compare <ref> [--runs N]`: each chosen scenario run N times on each build, alternating
 * (A B B A A B …: A = this tree, B = the ref), on the same Redis and machine, so what drifts during
 * the session (other work on the machine, a warmer disk cache) falls on both builds alike. A build
 * difference of 10 % hides inside one run's noise on a shared machine (±20 % run to run); it shows
 * in the medians of a few alternating runs, and in the ratios of each round's two runs (paired). Only the spawned daemon changes between A and B: the
 * scenario's code, inputs and checks are this tree's.
 */
import { loadavg } from 'node:os';
import { buildOf, thisBuild, type Build } from './builds.js';
import { useDaemonBin } from './daemon.js';
import type { BenchEnv, CompareReport, Scenario, ScenarioResult, Spread } from './report.js';

export function spreadOf(values: readonly number[]): Spread {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted[sorted.length - 1] ?? Number.NaN, n: sorted.length };
}

/** Medians and spreads by scenario and measure, over the runs that did not fail. */
export function summarise(rounds: CompareReport['rounds']): CompareReport['summary'] {
  const summary: CompareReport['summary'] = [];
  const scenarios = [...new Set(rounds.map((r) => r.scenario))];
  for (const scenario of scenarios) {
    const mine = rounds.filter((r) => r.scenario === scenario && r.error === undefined);
    const measures = [...new Set(mine.flatMap((r) => Object.keys(r.measures)))];
    for (const measure of measures) {
      const valuesOf = (build: 'a' | 'b'): number[] =>
        mine.filter((r) => r.build === build && Number.isFinite(r.measures[measure])).map((r) => r.measures[measure] as number);
      const a = spreadOf(valuesOf('a'));
      const b = spreadOf(valuesOf('b'));
      summary.push({ scenario, measure, a, b, ratio: a.median / b.median, paired: spreadOf(pairedRatios(mine, measure)) });
    }
  }
  return summary;
}

/**
 * Each round's ratio A ÷ B: the two runs of a round ran back to back, so the machine's drift over
 * the session (its speed varied by a third between hours here) falls on both alike; the spread of
 * these ratios says whether a difference is the builds' or the machine's.
 */
function pairedRatios(rounds: CompareReport['rounds'], measure: string): number[] {
  const ratios: number[] = [];
  for (const round of new Set(rounds.map((r) => r.round))) {
    const valueOf = (build: 'a' | 'b'): number | undefined => rounds.find((r) => r.round === round && r.build === build)?.measures[measure];
    const [a, b] = [valueOf('a'), valueOf('b')];
    if (a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b !== 0) ratios.push(a / b);
  }
  return ratios;
}

async function runOne(scenario: Scenario, env: BenchEnv, build: Build): Promise<ScenarioResult> {
  useDaemonBin(build.bin, build.label === 'this tree' ? 'this' : build.label);
  const started = performance.now();
  try {
    const result = await scenario.run(env);
    if (result.measures === undefined) throw new Error(`${scenario.name} returned no measures`);
    return { name: `${scenario.name} [${build.label}]`, ...result, durationMs: performance.now() - started, loadAvg1: loadavg()[0] ?? 0 };
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    return { name: `${scenario.name} [${build.label}]`, durationMs: performance.now() - started, figures: [], notes: [], error: message };
  }
}

export async function runCompare(
  selected: readonly Scenario[],
  env: BenchEnv,
  ref: string,
  runs: number,
  onResult: (result: ScenarioResult) => void,
): Promise<{ results: ScenarioResult[]; compare: CompareReport }> {
  const refused = selected.filter((s) => s.isComparable !== true);
  if (refused.length > 0) {
    throw new Error(`--compare: ${refused.map((s) => s.name).join(', ')} measure an in-process daemon (this tree's code on both sides); choose with --only`);
  }
  const a = await thisBuild();
  const b = await buildOf(ref, env.progress);
  const results: ScenarioResult[] = [];
  const rounds: CompareReport['rounds'] = [];
  try {
    for (let round = 1; round <= runs; round += 1) {
      for (const scenario of selected) {
        // A B, then B A, …: neither build always runs first (a warmer cache, a machine speeding up).
        const order = [['a', a] as const, ['b', b] as const];
        for (const [key, build] of round % 2 === 1 ? order : order.reverse()) {
          env.progress(`--compare: ${scenario.name} run ${round} of ${runs} on ${build.label}`);
          const result = await runOne(scenario, env, build);
          results.push(result);
          onResult(result);
          rounds.push({
            scenario: scenario.name,
            build: key,
            round,
            loadAvg1: result.loadAvg1 ?? loadavg()[0] ?? 0,
            isPassed: result.error === undefined && result.acceptance?.isPassed !== false,
            measures: result.measures ?? {},
            ...(result.error === undefined ? {} : { error: result.error }),
          });
        }
      }
    }
  } finally {
    useDaemonBin(a.bin);
  }
  const compare: CompareReport = {
    builds: { a: { label: a.label, commit: a.commit }, b: { label: b.label, commit: b.commit } },
    runs,
    rounds,
    summary: summarise(rounds),
  };
  return { results, compare };
}
