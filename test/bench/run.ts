/**
 * `npm run bench [-- --quick] [-- --only <name>[,<name>…]] [-- --compare <git ref> [--runs N]]`:
 * runs the scenarios in order against a Redis (REDIS_URL, else a private redis-server) and sandbox
 * APIs on loopback, prints one table, and writes bench-reports/latest.json and
 * bench-reports/latest.md. Every figure is a ratio to a reference measured in the same run, or an
 * absolute with the machine it was measured on. With --compare, each scenario runs N times
 * (default 3) on this tree's daemon and on the ref's, alternating (support/compare.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import { chainBacklogScenario } from './scenarios/chain-backlog.js';
import { dedupMemoryScenario } from './scenarios/dedup-memory.js';
import { eventsDedupScenario } from './scenarios/events-dedup.js';
import { goodputScenario } from './scenarios/goodput.js';
import { historyScenario } from './scenarios/history.js';
import { hostileLabelScenario } from './scenarios/hostile-label.js';
import { idleRssScenario } from './scenarios/idle-rss.js';
import { inboxBacklogScenario } from './scenarios/inbox-backlog.js';
import { ingestScenario } from './scenarios/ingest.js';
import { latencyScenario } from './scenarios/latency.js';
import { memoryScenario } from './scenarios/memory.js';
import { mixedScenario } from './scenarios/mixed-1000.js';
import { mixedDropLargeScenario, mixedDropScenario } from './scenarios/mixed-drop.js';
import { pushScenario } from './scenarios/push.js';
import { pushReplicaScenario } from './scenarios/push-replica.js';
import { roundTripsScenario } from './scenarios/round-trips.js';
import { itemBytesScenario } from './scenarios/item-bytes.js';
import { validatorsScenario } from './scenarios/validators.js';
import { runCompare } from './support/compare.js';
import { describeFolder, workFolderParent } from './support/work-folder.js';
import { daemonTransport, openBenchRedis, redisFacts } from './support/redis.js';
import {
  acceptanceBox,
  compareMarkdown,
  consoleTable,
  writeReports,
  type BenchEnv,
  type Machine,
  type RunReport,
  type Scenario,
  type ScenarioResult,
} from './support/report.js';

const SCENARIOS: readonly Scenario[] = [
  validatorsScenario,
  ingestScenario,
  inboxBacklogScenario,
  pushScenario,
  pushReplicaScenario,
  goodputScenario,
  latencyScenario,
  memoryScenario,
  eventsDedupScenario,
  dedupMemoryScenario,
  mixedScenario,
  mixedDropScenario,
  mixedDropLargeScenario,
  hostileLabelScenario,
  historyScenario,
  chainBacklogScenario,
  idleRssScenario,
  roundTripsScenario,
  itemBytesScenario,
];

interface Args {
  isQuick: boolean;
  only: string[] | null;
  compare: string | null;
  runs: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { isQuick: false, only: null, compare: null, runs: 3 };
  let hasRuns = false;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => inline ?? argv[++i] ?? '';
    if (name === '--quick') args.isQuick = true;
    else if (name === '--only') args.only = value().split(',').filter(Boolean);
    else if (name === '--compare') args.compare = value();
    else if (name === '--runs') {
      const text = value();
      args.runs = Number(text);
      hasRuns = true;
      if (!Number.isInteger(args.runs) || args.runs < 1 || args.runs > 50) throw new Error(`--runs: ${text} is not a whole number from 1 to 50`);
    } else {
      throw new Error(
        `unknown argument ${arg}; use --quick, --only <name>[,<name>…] (${SCENARIOS.map((s) => s.name).join(', ')}), --compare <git ref> [--runs N]`,
      );
    }
  }
  if (args.compare === '') throw new Error('--compare: give a git ref (a commit, branch or tag)');
  if (hasRuns && args.compare === null) throw new Error('--runs counts the runs of --compare; give --compare <git ref> too');
  const unknown = (args.only ?? []).filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`--only: unknown scenario ${unknown.join(', ')}; choose from ${SCENARIOS.map((s) => s.name).join(', ')}`);
  return args;
}

function machine(redisVersion: string, redisOrigin: string, workDir: string): Machine {
  const sh = (cmd: string, args: string[]): string => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  };
  const gib = (bytes: number): string => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  return {
    nproc: Number(sh('nproc', [])) || cpus().length,
    memory: `${gib(totalmem())} total, ${gib(freemem())} free at start (free -g: ${sh('free', ['-g']).split('\n')[1]?.replace(/\s+/g, ' ') ?? '?'})`,
    cpu: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    redis: redisVersion,
    redisOrigin,
    os: `${platform()} ${release()}`,
    workFolder: describeFolder(workDir),
    loadAvg: loadavg()
      .map((l) => l.toFixed(2))
      .join(' / '),
  };
}

async function main(): Promise<void> {
  const { isQuick, only, compare, runs } = parseArgs(process.argv.slice(2));
  // Without --only, a comparison runs the scenarios it can compare.
  const selected = SCENARIOS.filter((s) => (only === null ? compare === null || s.isComparable === true : only.includes(s.name)));
  const startedAt = new Date().toISOString();
  const redis = await openBenchRedis();
  // A signal or a crash must not leave the private redis-server (or a daemon) behind.
  // The work folder, once made: removed on the way out too (on a tmpfs its spools hold memory).
  const made: { workDir?: string } = {};
  const onFatal = (why: string): void => {
    process.stderr.write(`bench: ${why}; stopping\n`);
    void Promise.allSettled([redis.stop(), made.workDir === undefined ? undefined : rm(made.workDir, { recursive: true, force: true })]).finally(() =>
      process.exit(130),
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => onFatal(`received ${signal}`));
  process.on('uncaughtException', (error) => onFatal(`uncaught exception: ${error.stack ?? error.message}`));
  const facts = await redisFacts(redis.url);
  const workDir = await mkdtemp(join(workFolderParent(), 'cs-bench-'));
  made.workDir = workDir;
  const reportDir = join(PACKAGE_ROOT, 'bench-reports');
  const env: BenchEnv = {
    isQuick,
    redisUrl: redis.url,
    workDir,
    logDir: join(reportDir, 'logs'),
    progress: (message) => process.stderr.write(`  [${new Date().toISOString().slice(11, 19)}] ${message}\n`),
  };
  await mkdir(env.logDir, { recursive: true });
  // Daemons append to their log: start each selected scenario's logs afresh.
  for (const name of await readdir(env.logDir)) {
    if (selected.some((s) => name.startsWith(s.name))) await rm(join(env.logDir, name), { force: true });
  }
  const info = machine(
    facts.version,
    `${redis.origin}, maxmemory ${facts.maxmemoryBytes > 0 ? `${Math.round(facts.maxmemoryBytes / 1024 ** 2)} MB` : 'unbounded'}, ${facts.policy}; ${daemonTransport(redis.url)}`,
    workDir,
  );
  process.stdout.write(
    `carrier-sync bench (${isQuick ? 'quick' : 'full'}): ${selected.map((s) => s.name).join(', ')}\nmachine: ${info.nproc} cores, node ${info.node}, redis ${info.redis} (${info.redisOrigin}); spools in ${info.workFolder}\n\n`,
  );

  const results: ScenarioResult[] = [];
  let compareReport: RunReport['compare'];
  const onCompared = (result: ScenarioResult): void => {
    process.stdout.write(
      `▶ ${result.name}: ${result.error === undefined ? 'done' : 'FAILED'} in ${(result.durationMs / 1000).toFixed(1)} s (load average ${loadavg()[0]?.toFixed(2) ?? '?'}) ${Object.entries(
        result.measures ?? {},
      )
        .map(([k, v]) => `${k} ${v.toPrecision(4)}`)
        .join(', ')}\n`,
    );
    if (result.error !== undefined) process.stdout.write(`${result.error}\n`);
  };
  try {
    if (compare !== null) {
      const compared = await runCompare(selected, env, compare, runs, onCompared);
      results.push(...compared.results);
      compareReport = compared.compare;
    }
    for (const scenario of compare === null ? selected : []) {
      process.stdout.write(`▶ ${scenario.name} … `);
      const started = performance.now();
      let result: ScenarioResult;
      try {
        result = { name: scenario.name, ...(await scenario.run(env)), durationMs: performance.now() - started, loadAvg1: loadavg()[0] ?? 0 };
      } catch (error) {
        const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
        result = { name: scenario.name, durationMs: performance.now() - started, figures: [], notes: [], error: message };
      }
      results.push(result);
      process.stdout.write(
        `${result.error === undefined ? 'done' : 'FAILED'} in ${(result.durationMs / 1000).toFixed(1)} s (load average ${loadavg()[0]?.toFixed(2) ?? '?'})\n`,
      );
      if (result.error !== undefined) process.stdout.write(`${result.error}\n`);
    }
  } finally {
    await redis.stop();
    await rm(workDir, { recursive: true, force: true });
  }

  const report: RunReport = {
    startedAt,
    finishedAt: new Date().toISOString(),
    command: `npm run bench${isQuick || only !== null || compare !== null ? ' --' : ''}${isQuick ? ' --quick' : ''}${only === null ? '' : ` --only ${only.join(',')}`}${compare === null ? '' : ` --compare ${compare} --runs ${runs}`}`,
    mode: isQuick ? 'quick' : 'full',
    machine: info,
    results,
    ...(compareReport === undefined ? {} : { compare: compareReport }),
  };
  process.stdout.write(`\n${consoleTable(results)}\n\n`);
  if (compareReport !== undefined) process.stdout.write(`${compareMarkdown(compareReport).join('\n')}\n\n`);
  for (const result of results) if (result.acceptance !== undefined) process.stdout.write(`${acceptanceBox(result.acceptance)}\n\n`);
  const written = await writeReports(reportDir, report);
  process.stdout.write(`reports: ${written.json}, ${written.md}; daemon logs under ${env.logDir}\n`);
  const isFailed = results.length === 0 || results.some((r) => r.error !== undefined || r.acceptance?.isPassed === false);
  process.exitCode = isFailed ? 1 : 0;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
});
