// Runs in the image's prod-deps stage, after `npm ci --omit=dev`: removes from node_modules what
// the runtime never loads, and prints what it removed. Plain Node, no dependency.
//
// 1. Optional peers: packages the lockfile marks `devOptional` (in the dev tree and, optionally, in
//    the production one) that no production package lists as a dependency or optional dependency,
//    only as an optional peer. TypeScript (24 MB) arrives this way, as valibot's optional peer
//    through @bull-board/api. `npm ci --omit=dev` keeps such a package: npm drops a devOptional
//    one only when dev AND optional are both omitted, and `--omit=optional` would also drop real
//    optional dependencies (msgpackr-extract, the native msgpack BullMQ uses when present, and
//    detect-libc, which loads it).
// 2. Source maps and type declarations (`*.map`, `*.d.ts`, `*.d.mts`, `*.d.cts`): node never
//    reads them; the image runs without --enable-source-maps.
//
//   node prune-runtime.mjs [app folder, default .]
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const app = process.argv[2] ?? '.';
const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8'));

/** Apparent size of a file or folder, in bytes. */
function sizeOf(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

/** What production packages (not dev, not peer) depend on, by name. */
const depended = new Set(
  Object.values(lock.packages)
    .filter((entry) => entry.dev !== true)
    .flatMap((entry) => [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})]),
);
const nameOf = (path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

let devOptionalBytes = 0;
const devOptional = Object.entries(lock.packages)
  .filter(([path, entry]) => path.startsWith('node_modules/') && entry.devOptional === true && !depended.has(nameOf(path)))
  .map(([path]) => path);
for (const path of devOptional) {
  devOptionalBytes += sizeOf(join(app, path));
  rmSync(join(app, path), { recursive: true, force: true });
}

const DEAD_WEIGHT = /\.(map|d\.ts|d\.mts|d\.cts)$/;
let deadFiles = 0;
let deadBytes = 0;
for (const entry of readdirSync(join(app, 'node_modules'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !DEAD_WEIGHT.test(entry.name)) continue;
  const path = join(entry.parentPath, entry.name);
  deadBytes += statSync(path).size;
  rmSync(path);
  deadFiles += 1;
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
console.log(`pruned optional peers (${devOptional.join(', ') || 'none'}): ${mb(devOptionalBytes)}`);
console.log(`pruned ${deadFiles} source maps and type declarations: ${mb(deadBytes)}`);
console.log(`node_modules now ${mb(sizeOf(join(app, 'node_modules')))}`);
