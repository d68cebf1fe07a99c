/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. a daemon spawned by the bench with
 * BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"): the top functions by self time
 * and by total time (a function counted once per sample however deep it recurses), and self time
 * by package or source file. Samples outside [--from, --to] seconds after the profile's start
 * are skipped (to leave out the start-up and the shutdown).
 *   node dist/test/bench/tools/cpuprofile-summary.js <file.cpuprofile> [--top 25] [--from 2.5] [--to 30]
 * With `--against <other.cpuprofile>` (another build's profile of the same scenario, e.g. from
 * `--compare` with --cpu-prof-dir=/tmp/prof/{build}), each line's share in both and the difference.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function argValue(args: string[], name: string): number | undefined {
  const at = args.indexOf(name);
  return at < 0 ? undefined : Number(args[at + 1]);
}

/** node_modules/<pkg> (scoped too), src/<file> of this project, or node:<internal>. */
function moduleOf(url: string): string {
  if (url === '') return '(native/VM)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm !== null) return nm[1]!;
  const own = /\/dist\/(src\/.+)\.js$/.exec(url);
  if (own !== null) return own[1]!;
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '');
}

interface Summary {
  counted: number;
  idle: number;
  lengthUs: number;
  self: Map<string, number>;
  total: Map<string, number>;
  byModule: Map<string, number>;
}

/** Self and inclusive time per function, self time per package, over [fromUs, toUs]; `withLine` keys functions by line too. */
function summarise(file: string, fromUs: number, toUs: number, withLine: boolean): Summary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const keyOf = (node: ProfileNode): string =>
    `${node.callFrame.functionName || '(anonymous)'} ${moduleOf(node.callFrame.url)}${withLine ? `:${node.callFrame.lineNumber + 1}` : ''}`;
  const out: Summary = { counted: 0, idle: 0, lengthUs: profile.endTime - profile.startTime, self: new Map(), total: new Map(), byModule: new Map() };
  const add = (map: Map<string, number>, key: string, us: number): void => void map.set(key, (map.get(key) ?? 0) + us);
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) return;
    const node = byId.get(id);
    if (node === undefined) return;
    if (node.callFrame.functionName === '(idle)') {
      out.idle += delta;
      return;
    }
    out.counted += delta;
    add(out.self, keyOf(node), delta);
    const module = moduleOf(node.callFrame.url);
    add(out.byModule, module === '(native/VM)' ? node.callFrame.functionName || module : module, delta);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const key = keyOf(byId.get(cur)!);
      if (seen.has(key)) continue;
      seen.add(key);
      add(out.total, key, delta);
    }
  });
  return out;
}

function main(): void {
  const args = process.argv.slice(2);
  const file = args[0];
  if (file === undefined) throw new Error('usage: cpuprofile-summary <file.cpuprofile> [--top N] [--from s] [--to s] [--against <other.cpuprofile>]');
  const top = argValue(args, '--top') ?? 25;
  const fromUs = (argValue(args, '--from') ?? 0) * 1e6;
  const toUs = (argValue(args, '--to') ?? Infinity) * 1e6;
  const againstAt = args.indexOf('--against');
  const against = againstAt < 0 ? undefined : args[againstAt + 1];
  if (against !== undefined) return compareProfiles(file, against, fromUs, toUs, top);
  const { counted, idle, lengthUs, self, total, byModule } = summarise(file, fromUs, toUs, true);
  const ms = (us: number): string => (us / 1000).toFixed(0).padStart(7);
  const pct = (us: number): string => `${((100 * us) / counted).toFixed(1).padStart(5)}%`;
  const print = (title: string, map: Map<string, number>): void => {
    process.stdout.write(`\n${title}\n`);
    for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(us)} ms ${pct(us)}  ${key}\n`);
  };
  process.stdout.write(
    `${file}: ${(counted / 1e6).toFixed(2)} s on CPU, ${(idle / 1e6).toFixed(2)} s idle, window ${fromUs / 1e6}–${Number.isFinite(toUs) ? toUs / 1e6 : 'end'} s of ${(lengthUs / 1e6).toFixed(1)} s\n`,
  );
  print('self time by package / source file', byModule);
  print('self time by function', self);
  print('total time by function (inclusive)', total);
}

/**
 * Two builds' profiles of the same run (`--against`): each line's share of its profile's busy
 * samples, and the difference in points, largest first. Shares, not milliseconds: a sampled
 * profile on a loaded machine counts time the thread waited for a core as busy, alike in both.
 */
function compareProfiles(fileA: string, fileB: string, fromUs: number, toUs: number, top: number): void {
  const a = summarise(fileA, fromUs, toUs, false);
  const b = summarise(fileB, fromUs, toUs, false);
  const share = (map: Map<string, number>, key: string, counted: number): number => (100 * (map.get(key) ?? 0)) / counted;
  const print = (title: string, mapA: Map<string, number>, mapB: Map<string, number>): void => {
    process.stdout.write(`\n${title}: share of A, of B, A − B (points)\n`);
    const rows = [...new Set([...mapA.keys(), ...mapB.keys()])].map((key) => {
      const sa = share(mapA, key, a.counted);
      const sb = share(mapB, key, b.counted);
      return { key, sa, sb, diff: sa - sb };
    });
    for (const row of rows.sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff)).slice(0, top)) {
      process.stdout.write(
        `${row.sa.toFixed(1).padStart(6)}% ${row.sb.toFixed(1).padStart(6)}% ${row.diff >= 0 ? '+' : ''}${row.diff.toFixed(2).padStart(6)}  ${row.key}\n`,
      );
    }
  };
  process.stdout.write(`A ${fileA}: ${(a.counted / 1e6).toFixed(2)} s busy\nB ${fileB}: ${(b.counted / 1e6).toFixed(2)} s busy\n`);
  print('self time by package / source file', a.byModule, b.byModule);
  print('self time by function', a.self, b.self);
  print('total time by function (inclusive)', a.total, b.total);
}

main();
