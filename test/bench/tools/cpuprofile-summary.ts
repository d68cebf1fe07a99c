/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. a daemon spawned by the bench with
 * BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"): the top functions by self time
 * and by total time (a function counted once per sample however deep it recurses), and self time
 * by package or source file. Samples outside [--from, --to] seconds after the profile's start
 * are skipped (to leave out the start-up and the shutdown).
 *   node dist/test/bench/tools/cpuprofile-summary.js <file.cpuprofile> [--top 25] [--from 2.5] [--to 30]
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

function main(): void {
  const args = process.argv.slice(2);
  const file = args[0];
  if (file === undefined) throw new Error('usage: cpuprofile-summary <file.cpuprofile> [--top N] [--from s] [--to s]');
  const top = argValue(args, '--top') ?? 25;
  const fromUs = (argValue(args, '--from') ?? 0) * 1e6;
  const toUs = (argValue(args, '--to') ?? Infinity) * 1e6;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const keyOf = (node: ProfileNode): string =>
    `${node.callFrame.functionName || '(anonymous)'} ${moduleOf(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;

  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const byModule = new Map<string, number>();
  let at = 0;
  let counted = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) return;
    const node = byId.get(id);
    if (node === undefined) return;
    if (node.callFrame.functionName === '(idle)') {
      idle += delta;
      return;
    }
    counted += delta;
    self.set(keyOf(node), (self.get(keyOf(node)) ?? 0) + delta);
    byModule.set(
      moduleOf(node.callFrame.url) === '(native/VM)' ? node.callFrame.functionName || '(native/VM)' : moduleOf(node.callFrame.url),
      (byModule.get(moduleOf(node.callFrame.url) === '(native/VM)' ? node.callFrame.functionName || '(native/VM)' : moduleOf(node.callFrame.url)) ?? 0) + delta,
    );
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const key = keyOf(byId.get(cur)!);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + delta);
    }
  });
  const ms = (us: number): string => (us / 1000).toFixed(0).padStart(7);
  const pct = (us: number): string => `${((100 * us) / counted).toFixed(1).padStart(5)}%`;
  const print = (title: string, map: Map<string, number>): void => {
    process.stdout.write(`\n${title}\n`);
    for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(us)} ms ${pct(us)}  ${key}\n`);
  };
  process.stdout.write(
    `${file}: ${(counted / 1e6).toFixed(2)} s on CPU, ${(idle / 1e6).toFixed(2)} s idle, window ${fromUs / 1e6}–${Number.isFinite(toUs) ? toUs / 1e6 : 'end'} s of ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s\n`,
  );
  print('self time by package / source file', byModule);
  print('self time by function', self);
  print('total time by function (inclusive)', total);
}

main();
