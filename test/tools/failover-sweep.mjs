/* global console, process, URL */
// The failover sweep (issue 44): runs test/e2e/redis-failover.test.ts for many seeds in a row, each
// a lagging-replica failover with two daemon processes, optionally under load, and prints a tally:
// runs passed and failed, per topology and per kind of failure, and the time a run took.
//
//   npm run test:failover -- --runs 30 --load 2 [--topology sentinel|cluster|both] [--from 1]
//
// --runs N      seeds from..from+N-1 of each topology (default: FAILOVER_SEEDS, else 1..8)
// --load N      N busy loops beside the sweep for its whole length, at the sweep's own niceness
//               (nice 0 when run plainly: the way a shared CI machine loads it); ended by pid
// --topology    sentinel, cluster or both (default both)
// --from S      the first seed (default 1)
// The vitest run's own output goes to stdout as it runs; its JSON report to
// test-artifacts/failover-sweep.json. Exit 0 only when every run passed.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('../..', import.meta.url).pathname;
const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    load: { type: 'string', default: '0' },
    topology: { type: 'string', default: 'both' },
    from: { type: 'string', default: '1' },
  },
});

const from = Number(values.from);
const seeds =
  values.runs !== undefined
    ? Array.from({ length: Number(values.runs) }, (_, i) => from + i)
    : (process.env['FAILOVER_SEEDS'] ?? '1,2,3,4,5,6,7,8').split(',').map(Number);
const topologies = values.topology === 'both' ? ['sentinel', 'cluster'] : [values.topology];
const load = Number(values.load);
if (seeds.some((seed) => !Number.isInteger(seed)) || !Number.isInteger(load) || load < 0 || !topologies.every((t) => t === 'sentinel' || t === 'cluster')) {
  console.error('usage: failover-sweep.mjs [--runs N] [--load N] [--topology sentinel|cluster|both] [--from S]');
  process.exit(2);
}

/** A failure's kind, from its assertion message: what the tally counts. */
const KINDS = [
  ['sent twice', /accepted twice/],
  ['sent to failed/', /files sent to failed\//],
  ['left in an inbox or .inflight/', /every file archived/],
  ['work did not resume within 10 s', /request after the promotion|work flows again/],
  ['an answer written before the kill without the replica', /answers written before the kill without the replica/],
  ['an error line', /error lines/],
  ['more than one warn line about Redis', /warn lines about Redis/],
  ['an item lost or out of order', /label of |events of /],
  ['status wrong after the failover', /topology|lastFailover|status/i],
  ['the topology did not start or fail over', /Failed listening|a replica promoted|the replica lagging|answers before the kill/],
  // Before any failover: the two daemons' start (modules, the delivery thread) starved of CPU.
  ['a daemon did not start within 30 s (setup, before the failover)', /waiting for 'carrier-sync started'/],
];
const kindOf = (message) => KINDS.find(([, pattern]) => pattern.test(message))?.[0] ?? `other: ${message.split('\n')[0].slice(0, 100)}`;

const loops = Array.from({ length: load }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
const endLoops = () => {
  for (const loop of loops) if (loop.exitCode === null && loop.pid !== undefined) process.kill(loop.pid, 'SIGKILL');
};
process.on('exit', endLoops);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

mkdirSync(join(root, 'test-artifacts'), { recursive: true });
const report = join(root, 'test-artifacts', 'failover-sweep.json');
const startedAt = Date.now();
console.log(
  `failover sweep: seeds ${seeds[0]}..${seeds.at(-1)} (${seeds.length}), ${topologies.join(' and ')}, ${load} busy loop(s) (pids ${loops.map((l) => l.pid).join(', ') || 'none'})`,
);
const code = await new Promise((resolve) => {
  const vitest = spawn(
    join(root, 'node_modules', '.bin', 'vitest'),
    ['run', '--config', 'test/vitest.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, 'test/e2e/redis-failover.test.ts'],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, TZ: 'UTC', FAILOVER_SEEDS: seeds.join(','), FAILOVER_TOPOLOGIES: topologies.join(',') },
    },
  );
  vitest.on('exit', (exitCode) => resolve(exitCode ?? 1));
});
endLoops();

let results = [];
try {
  results = JSON.parse(readFileSync(report, 'utf8')).testResults.flatMap((file) => file.assertionResults);
} catch (error) {
  console.error(`no report from vitest (${error.message}); exit ${code}`);
  process.exit(1);
}
const tally = new Map();
const failures = [];
for (const result of results) {
  const topology = /^(sentinel|cluster)/.exec(result.title)?.[1] ?? '?';
  const seed = /seed (\d+)/.exec(result.ancestorTitles.join(' '))?.[1] ?? '?';
  const entry = tally.get(topology) ?? { passed: 0, failed: 0, skipped: 0, ms: [], kinds: new Map() };
  tally.set(topology, entry);
  if (result.status === 'passed') entry.passed += 1;
  else if (result.status === 'failed') {
    entry.failed += 1;
    // A run's soft assertions are each a message: every kind it showed counts once for the run.
    const kinds = new Set((result.failureMessages ?? []).flatMap((message) => message.split(/\n(?=AssertionError|Error)/)).map(kindOf));
    for (const kind of kinds) entry.kinds.set(kind, (entry.kinds.get(kind) ?? 0) + 1);
    failures.push(`${topology} seed ${seed}: ${[...kinds].join('; ')}`);
  } else entry.skipped += 1;
  if (typeof result.duration === 'number') entry.ms.push(result.duration);
}

const seconds = (ms) => (ms / 1000).toFixed(1);
console.log(`\nfailover sweep tally (${load} busy loop(s), ${seconds(Date.now() - startedAt)} s in all, build included)`);
for (const [topology, entry] of tally) {
  const sorted = [...entry.ms].sort((a, b) => a - b);
  const median = sorted.length === 0 ? 0 : sorted[Math.floor(sorted.length / 2)];
  const max = sorted.at(-1) ?? 0;
  console.log(
    `  ${topology}: ${entry.passed} passed, ${entry.failed} failed${entry.skipped > 0 ? `, ${entry.skipped} not run` : ''}; a run took ${seconds(median)} s (median), ${seconds(max)} s (longest)`,
  );
  for (const [kind, n] of entry.kinds) console.log(`    ${n} × ${kind}`);
}
for (const failure of failures) console.log(`  failed: ${failure}`);
process.exit(failures.length === 0 && code === 0 ? 0 : 1);
