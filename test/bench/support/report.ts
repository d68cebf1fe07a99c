/**
 * What a scenario returns and how the run prints and stores it: one row per figure, with its
 * reference (measured in the same run) or the machine it was measured on, and whether a target
 * was met. Acceptance figures (exact counts) are printed in a box of their own.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Figure {
  metric: string;
  value: number | string;
  unit: string;
  /** What the value is compared with, e.g. "raw BullMQ no-op: 3,100 jobs/s (ratio 0.62)". */
  reference?: string;
  target?: string;
  /** undefined: no target. */
  isMet?: boolean;
}

export interface Acceptance {
  title: string;
  isPassed: boolean;
  lines: string[];
}

export interface ScenarioResult {
  name: string;
  durationMs: number;
  /** 1-minute load average when the scenario ended (other work on the machine skews figures). */
  loadAvg1?: number;
  figures: Figure[];
  acceptance?: Acceptance;
  notes: string[];
  /** Raw numbers kept in latest.json. */
  details?: Record<string, unknown>;
  /**
   * The figures of the daemon under measure, by name with their unit ("drain (s)"), lower is
   * better: what `--compare` sets side by side for the two builds.
   */
  measures?: Record<string, number>;
  error?: string;
}

export interface BenchEnv {
  isQuick: boolean;
  redisUrl: string;
  /** Scratch folder of this run (spools, staged files). */
  workDir: string;
  logDir: string;
  /** One line on stderr while a long scenario runs. */
  progress(message: string): void;
}

export interface Scenario {
  name: string;
  /**
   * Every measure comes from a spawned daemon (`spawnDaemon`), so `--compare` can run it on
   * another build's binary; in-process figures would measure this tree's code on both sides.
   */
  isComparable?: boolean;
  run(env: BenchEnv): Promise<Omit<ScenarioResult, 'name' | 'durationMs'>>;
}

export interface Machine {
  nproc: number;
  memory: string;
  cpu: string;
  node: string;
  redis: string;
  redisOrigin: string;
  os: string;
  /** Where the spools were, and its file system (support/work-folder.ts). */
  workFolder: string;
  /** 1/5/15-minute load averages when the run started. */
  loadAvg: string;
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  command: string;
  mode: 'quick' | 'full';
  machine: Machine;
  results: ScenarioResult[];
  /** `--compare`: the alternating runs and their summary (results then holds every run's result). */
  compare?: CompareReport;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export interface CompareReport {
  /** a = this tree, b = the ref given to --compare. */
  builds: { a: { label: string; commit: string }; b: { label: string; commit: string } };
  runs: number;
  /** In the order they ran (A B, B A, …): each run's measures and the load average at its end. */
  rounds: Array<{ scenario: string; build: 'a' | 'b'; round: number; loadAvg1: number; isPassed: boolean; measures: Record<string, number>; error?: string }>;
  /** `ratio`: of the medians; `paired`: each round's A ÷ B (its two runs back to back). */
  summary: Array<{ scenario: string; measure: string; a: Spread; b: Spread; ratio: number; paired: Spread }>;
}

const fmt = (value: number | string): string => {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return String(value);
  if (value !== 0 && Math.abs(value) < 0.1) return value.toPrecision(2);
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
};

const mark = (figure: Figure): string => (figure.isMet === undefined ? '' : figure.isMet ? 'met' : 'not met');

export function tableRows(results: readonly ScenarioResult[]): string[][] {
  const rows: string[][] = [];
  for (const result of results) {
    if (result.error !== undefined) rows.push([result.name, 'FAILED', result.error.split('\n')[0] ?? '', '', '', '']);
    for (const figure of result.figures) {
      rows.push([result.name, figure.metric, `${fmt(figure.value)} ${figure.unit}`.trim(), figure.reference ?? '', figure.target ?? '', mark(figure)]);
    }
  }
  return rows;
}

const HEADER = ['scenario', 'metric', 'value', 'reference (same run)', 'target', 'met'];

export function consoleTable(results: readonly ScenarioResult[]): string {
  const rows = [HEADER, ...tableRows(results)];
  const widths = HEADER.map((_, column) => Math.min(70, Math.max(...rows.map((row) => (row[column] ?? '').length))));
  const line = (row: string[]): string => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ');
  return [line(HEADER), widths.map((w) => '-'.repeat(w)).join('-+-'), ...rows.slice(1).map(line)].join('\n');
}

export function acceptanceBox(acceptance: Acceptance): string {
  const title = `ACCEPTANCE ${acceptance.title}: ${acceptance.isPassed ? 'PASSED' : 'FAILED'}`;
  const width = Math.max(title.length, ...acceptance.lines.map((l) => l.length)) + 4;
  const bar = '='.repeat(width);
  return [bar, `  ${title}`, ...acceptance.lines.map((l) => `  ${l}`), bar].join('\n');
}

export function markdownReport(report: RunReport): string {
  const m = report.machine;
  const escape = (cell: string): string => cell.replaceAll('|', '\\|');
  const out: string[] = [
    `# Benchmark run (${report.mode})`,
    '',
    `- started ${report.startedAt}, finished ${report.finishedAt}`,
    `- command: \`${report.command}\``,
    `- machine: ${m.nproc} cores (${m.cpu}), ${m.memory}, ${m.os}; node ${m.node}; redis ${m.redis} (${m.redisOrigin}); spools in ${m.workFolder}; load average at start ${m.loadAvg}`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...tableRows(report.results).map((row) => `| ${row.map(escape).join(' | ')} |`),
    '',
  ];
  if (report.compare !== undefined) out.push(...compareMarkdown(report.compare), '');
  for (const result of report.results) {
    if (result.acceptance !== undefined) out.push('```', acceptanceBox(result.acceptance), '```', '');
  }
  for (const result of report.results) {
    if (result.notes.length === 0) continue;
    const load = result.loadAvg1 === undefined ? '' : `, load average ${result.loadAvg1.toFixed(2)} at its end`;
    out.push(`**${result.name}** (${(result.durationMs / 1000).toFixed(1)} s${load})`, '', ...result.notes.map((n) => `- ${n}`), '');
  }
  return out.join('\n');
}

const spread = (s: Spread): string => `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)}, ${s.n} runs)`;

/** The comparison as rows: each measure's median (spread) on both builds and the ratio of medians. */
export function compareRows(compare: CompareReport): string[][] {
  const { a, b } = compare.builds;
  const header = [
    'scenario',
    'measure',
    `${a.label} (${a.commit}) median (min–max, runs)`,
    `${b.label} (${b.commit})`,
    `ratio ${a.label} ÷ ${b.label}`,
    'paired: each round’s ratio, median (min–max)',
  ];
  const paired = (s: Spread): string => (s.n === 0 ? '' : `${s.median.toFixed(3)}× (${s.min.toFixed(3)}–${s.max.toFixed(3)})`);
  const rows = compare.summary.map((row) => [row.scenario, row.measure, spread(row.a), spread(row.b), `${row.ratio.toFixed(3)}×`, paired(row.paired)]);
  return [header, ...rows];
}

export function compareMarkdown(compare: CompareReport): string[] {
  const [header = [], ...rows] = compareRows(compare);
  const escape = (cell: string): string => cell.replaceAll('|', '\\|');
  const names = [...new Set(compare.rounds.flatMap((r) => Object.keys(r.measures)))];
  return [
    `## --compare: ${compare.runs} alternating runs of each build (A B, B A, …), same Redis, same machine`,
    '',
    `| ${header.map(escape).join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
    '',
    'Each run, in the order run:',
    '',
    `| # | scenario | build | load avg (1 min, at its end) | outcomes | ${names.map(escape).join(' | ')} |`,
    `|---|---|---|---|---|${names.map(() => '---').join('|')}|`,
    ...compare.rounds.map(
      (r, i) =>
        `| ${i + 1} | ${r.scenario} | ${compare.builds[r.build].label} | ${r.loadAvg1.toFixed(2)} | ${r.error === undefined ? (r.isPassed ? 'as predicted' : 'NOT as predicted') : `FAILED: ${escape(r.error.split('\n')[0] ?? '')}`} | ${names.map((n) => (r.measures[n] === undefined ? '' : fmt(r.measures[n]))).join(' | ')} |`,
    ),
  ];
}

export async function writeReports(dir: string, report: RunReport): Promise<{ json: string; md: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'latest.json');
  const md = join(dir, 'latest.md');
  await writeFile(json, JSON.stringify(report, null, 2) + '\n');
  await writeFile(md, markdownReport(report));
  return { json, md };
}
