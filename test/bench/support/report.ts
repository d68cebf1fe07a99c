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
}

const fmt = (value: number | string): string => {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return String(value);
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
    `- machine: ${m.nproc} cores (${m.cpu}), ${m.memory}, ${m.os}; node ${m.node}; redis ${m.redis} (${m.redisOrigin}); load average at start ${m.loadAvg}`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...tableRows(report.results).map((row) => `| ${row.map(escape).join(' | ')} |`),
    '',
  ];
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

export async function writeReports(dir: string, report: RunReport): Promise<{ json: string; md: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'latest.json');
  const md = join(dir, 'latest.md');
  await writeFile(json, JSON.stringify(report, null, 2) + '\n');
  await writeFile(md, markdownReport(report));
  return { json, md };
}
