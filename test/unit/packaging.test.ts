/**
 * Packaging checks that run without a Docker engine: the Dockerfile is linted with
 * dockerfile-utils and read instruction by instruction; compose.yaml and the example systemd unit
 * are parsed and held to what docs/production-redis.md promises (durable Redis, non-root image, health
 * check, graceful stop longer than the shutdown grace period, no real secrets).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

// LSP DiagnosticSeverity (vscode-languageserver-types): 1 error, 2 warning, 3 information, 4 hint.
const SEVERITY_ERROR = 1;
const SEVERITY_WARNING = 2;

/** The bin's shebang: `#!/usr/bin/env -S NAME=value … node --flag …`. */
const SHEBANG = /^#!\/usr\/bin\/env -S((?: [A-Z_]+=\S+)*) node((?: --[\w-]+(?:=\S+)?)*)\n/.exec(read('src/main.ts'));
/** The environment every launch line sets (`NAME=value`): the assignments on the bin's shebang. */
const LAUNCH_ENV = (SHEBANG?.[1] ?? '').trim().split(' ').filter(Boolean);
/** Node flags every launch line carries: the ones on the bin's shebang. */
const NODE_FLAGS = (SHEBANG?.[2] ?? '').trim().split(' ').filter(Boolean);

const defaults = parseYaml(read('config/default.yaml')) as { http: { port: number }; shutdown: { graceMs: number } };
const graceSeconds = defaults.shutdown.graceMs / 1000;

// ---- Dockerfile ---------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Instructions with continuation lines joined; comments (also inside continuations) and blank lines dropped. */
function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  let startLine = 0;
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (pending === '') startLine = index + 1;
    if (trimmed.endsWith('\\')) {
      pending += `${trimmed.slice(0, -1).trim()} `;
      continue;
    }
    pending += trimmed;
    const match = /^(\S+)\s*([\s\S]*)$/.exec(pending);
    if (match) instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.trim(), line: startLine });
    pending = '';
  }
  return instructions;
}

function stagesOf(instructions: readonly Instruction[]): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const words = instruction.args.split(/\s+/).filter((word) => !word.startsWith('--'));
      const asIndex = words.findIndex((word) => word.toUpperCase() === 'AS');
      stages.push({ image: words[0] ?? '', name: asIndex >= 0 ? words[asIndex + 1] : undefined, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return stages;
}

/** KEY=value pairs of ENV (the legacy `ENV KEY value` form too); double quotes removed. */
function envOf(stage: Stage): Map<string, string> {
  const env = new Map<string, string>();
  for (const { args } of stage.instructions.filter((instruction) => instruction.keyword === 'ENV')) {
    if (!args.includes('=')) {
      const [key, ...rest] = args.split(/\s+/);
      env.set(key!, rest.join(' '));
      continue;
    }
    for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
      env.set(match[1]!, match[2]!.replace(/^"|"$/g, ''));
    }
  }
  return env;
}

const all = (stage: Stage, keyword: string): Instruction[] => stage.instructions.filter((instruction) => instruction.keyword === keyword);
const last = (stage: Stage, keyword: string): Instruction | undefined => all(stage, keyword).at(-1);

function jsonArray(instruction: Instruction | undefined): string[] | undefined {
  if (instruction === undefined) return undefined;
  try {
    const value = JSON.parse(instruction.args) as unknown;
    return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

/** COPY's words without its --flags: sources…, destination. */
function copyPaths(instruction: Instruction): string[] {
  const jsonForm = jsonArray(instruction);
  return jsonForm ?? instruction.args.split(/\s+/).filter((word) => !word.startsWith('--'));
}

const copyFrom = (instruction: Instruction): string | undefined => /--from=(\S+)/.exec(instruction.args)?.[1];

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const instructions = parseDockerfile(text);
  const stages = stagesOf(instructions);
  const runtime = stages.at(-1)!;

  it('lints clean with dockerfile-utils (no error, no warning)', () => {
    // The validator is live: a broken file does give an error.
    expect(validate('FROM\n').some((diagnostic) => diagnostic.severity === SEVERITY_ERROR)).toBe(true);
    const problems = validate(text)
      .filter((diagnostic) => diagnostic.severity === SEVERITY_ERROR || diagnostic.severity === SEVERITY_WARNING)
      .map((diagnostic) => `line ${diagnostic.range.start.line + 1}: ${diagnostic.message}`);
    expect(problems).toEqual([]);
  });

  it('is multi-stage on node:20-bookworm-slim: build with npm ci + npm run build, then a runtime stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const stageNames = new Set(stages.map((stage) => stage.name).filter(Boolean));
    for (const stage of stages) {
      expect(stage.image === 'node:20-bookworm-slim' || stageNames.has(stage.image), `FROM ${stage.image}`).toBe(true);
    }
    expect(runtime.image).toBe('node:20-bookworm-slim');
    const build = stages.find((stage) => all(stage, 'RUN').some((run) => /\bnpm run build\b/.test(run.args)));
    expect(build, 'a stage runs `npm run build`').toBeDefined();
    expect(all(build!, 'RUN').some((run) => /\bnpm ci\b/.test(run.args))).toBe(true);
    expect(build).not.toBe(runtime);
  });

  it('ships production dependencies only: node_modules from an `--omit=dev` install or a prune', () => {
    const isProductionInstall = (args: string): boolean =>
      /\bnpm (ci|install|prune)\b[^&;|]*--omit[= ]dev\b/.test(args) || /\bnpm prune\b[^&;|]*--production\b/.test(args);
    const sources = all(runtime, 'COPY').filter((copy) =>
      copyPaths(copy)
        .slice(0, -1)
        .some((path) => /node_modules\/?$/.test(path)),
    );
    expect(sources.length, 'the runtime stage copies node_modules from another stage').toBeGreaterThan(0);
    for (const copy of sources) {
      const from = stages.find((stage) => stage.name === copyFrom(copy));
      expect(from, `COPY ${copy.args}`).toBeDefined();
      const runs = all(from!, 'RUN').map((run) => run.args);
      expect(runs.some(isProductionInstall), `stage ${from!.name} installs with --omit=dev or prunes`).toBe(true);
      // `npm ci` runs `prepare` (tsc, a devDependency): a production-only install must skip scripts.
      for (const run of runs.filter((args) => /\bnpm ci\b[^&;|]*--omit[= ]dev\b/.test(args))) expect(run).toMatch(/--ignore-scripts\b/);
    }
    for (const run of all(runtime, 'RUN')) expect(run.args).not.toMatch(/\bnpm (ci|install)\b(?![^&;|]*--omit[= ]dev)/);
  });

  it('copies what the runtime needs (dist/, config/, package.json) and no sources', () => {
    const destinations = all(runtime, 'COPY').map((copy) => ({ sources: copyPaths(copy).slice(0, -1), from: copyFrom(copy) }));
    const copied = destinations.flatMap(({ sources }) => sources.map((source) => source.replace(/^\/app\//, '').replace(/\/$/, '')));
    expect(copied).toEqual(expect.arrayContaining(['dist', 'config', 'package.json']));
    expect(copied).not.toContain('src');
    expect(copied).not.toContain('.');
    expect(all(runtime, 'ADD')).toEqual([]);
  });

  it('copies only files that exist in the repository', () => {
    for (const stage of stages) {
      for (const copy of all(stage, 'COPY').filter((instruction) => copyFrom(instruction) === undefined)) {
        for (const source of copyPaths(copy).slice(0, -1)) expect(existsSync(join(ROOT, source)), `COPY source ${source}`).toBe(true);
      }
    }
  });

  it('runs as a non-root user', () => {
    const user = last(runtime, 'USER')?.args.split(':')[0];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    const userIndex = runtime.instructions.lastIndexOf(last(runtime, 'USER')!);
    const entrypointIndex = runtime.instructions.indexOf(last(runtime, 'ENTRYPOINT')!);
    expect(userIndex).toBeLessThan(entrypointIndex);
  });

  it('sets production env, the spool volume and the ops port', () => {
    const env = envOf(runtime);
    expect(env.get('NODE_ENV')).toBe('production');
    expect(env.get('CARRIER_SYNC_HTTP_HOST')).toBe('0.0.0.0');
    expect(env.get('CARRIER_SYNC_SPOOL_DIR')).toBe('/spool');
    // The bin's shebang sets these for node; the image's entrypoint runs node itself.
    for (const entry of LAUNCH_ENV) expect(env.get(entry.split('=')[0]!)).toBe(entry.split('=')[1]);
    const volumes = all(runtime, 'VOLUME').flatMap((volume) => jsonArray(volume) ?? volume.args.split(/\s+/));
    expect(volumes).toContain('/spool');
    const ports = all(runtime, 'EXPOSE').flatMap((expose) => expose.args.split(/\s+/).map((port) => port.replace(/\/tcp$/, '')));
    expect(ports).toContain(String(defaults.http.port));
  });

  it('has a HEALTHCHECK on /healthz done with node (no curl in the slim image)', () => {
    const healthcheck = last(runtime, 'HEALTHCHECK');
    expect(healthcheck).toBeDefined();
    expect(healthcheck!.args).toMatch(/\bCMD\b/);
    expect(healthcheck!.args).toContain('/healthz');
    expect(healthcheck!.args).toContain(String(defaults.http.port));
    expect(healthcheck!.args).toMatch(/\bnode\b/);
    expect(healthcheck!.args).not.toMatch(/\b(curl|wget)\b/);
  });

  it('starts node in exec form so that it gets the signals as PID 1', () => {
    const entrypoint = jsonArray(last(runtime, 'ENTRYPOINT'));
    expect(entrypoint, 'ENTRYPOINT is a JSON array').toBeDefined();
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin['carrier-sync']!;
    expect(entrypoint).toEqual(['node', ...NODE_FLAGS, bin.replace(/^\.\//, '')]);
    expect(jsonArray(last(runtime, 'CMD'))).toEqual(['start']);
    const stopSignal = last(runtime, 'STOPSIGNAL');
    if (stopSignal) expect(stopSignal.args).toBe('SIGTERM');
  });
});

describe('Dockerfile: what the image holds', () => {
  const stages = stagesOf(parseDockerfile(read('Dockerfile')));

  it('fails the step when npm ci fails: every `npm ci` is followed by `npm ls` in the same RUN', () => {
    // The npm of Node 20 can exit 0 after a registry failure ("Exit handler never called!"); `npm ls`
    // exits non-zero when a package of the lockfile is missing, so no half-installed layer is cached.
    const installs = stages.flatMap((stage) => all(stage, 'RUN')).filter((run) => /\bnpm ci\b/.test(run.args));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    for (const run of installs) expect(run.args, `line ${run.line}`).toMatch(/\bnpm ci\b[^;|]*&&[^;|]*\bnpm ls\b/);
  });

  it('prunes optional peers, source maps and type declarations from the runtime node_modules', () => {
    const runtime = stages.at(-1)!;
    const from = copyFrom(all(runtime, 'COPY').find((copy) => copyPaths(copy).some((path) => /node_modules\/?$/.test(path)))!);
    const runs = all(
      stages.find((stage) => stage.name === from)!,
      'RUN',
    ).map((run) => run.args);
    expect(runs.some((args) => /prune-runtime\.mjs/.test(args))).toBe(true);
    expect(existsSync(join(ROOT, 'deploy/image/prune-runtime.mjs'))).toBe(true);
  });
});

describe('engines, lockfile and base image agree', () => {
  const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
  const lowest = semver.minVersion(pkg.engines.node)!.version;

  it('every package of the lockfile runs on the lowest Node that package.json allows', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string; engines?: { node?: string } | string[] }> };
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !Array.isArray(entry.engines) && entry.engines?.node !== undefined)
      .filter(([, entry]) => !semver.satisfies(lowest, (entry.engines as { node: string }).node))
      .map(([path, entry]) => `${path}@${entry.version} wants node ${(entry.engines as { node: string }).node}`);
    expect(refusing, `not runnable on node ${lowest}: pin a version that is (package.json overrides)`).toEqual([]);
  });

  it("the image's base is the Node major of the engines range", () => {
    const major = semver.major(lowest);
    for (const stage of stagesOf(parseDockerfile(read('Dockerfile'))).filter((stage) => stage.image.startsWith('node:'))) {
      expect(stage.image).toMatch(new RegExp(`^node:${major}-`));
    }
    expect(read('deploy/image/stand-in-base.sh')).toContain(`node:${major}-bookworm-slim`);
  });
});

// ---- compose.yaml -------------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: Array<string | { type?: string; source?: string; target?: string }>;
  ports?: Array<string | number | { target?: number; published?: string | number }>;
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  profiles?: string[];
  stop_grace_period?: string;
  hostname?: string;
  read_only?: boolean;
}

interface Compose {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const words = (command: string | string[] | undefined): string[] =>
  command === undefined ? [] : Array.isArray(command) ? command : command.trim().split(/\s+/);

function environmentOf(service: ComposeService): Map<string, string> {
  const env = new Map<string, string>();
  if (Array.isArray(service.environment)) {
    for (const entry of service.environment) {
      const at = entry.indexOf('=');
      env.set(at < 0 ? entry : entry.slice(0, at), at < 0 ? '' : entry.slice(at + 1));
    }
  } else {
    for (const [key, value] of Object.entries(service.environment ?? {})) env.set(key, value === null ? '' : String(value));
  }
  return env;
}

/** [source, target] of every volume mount. */
function mountsOf(service: ComposeService): Array<[string, string]> {
  return (service.volumes ?? []).map((volume) => {
    if (typeof volume === 'string') {
      const [source, target] = volume.split(':');
      return [source ?? '', target ?? ''];
    }
    return [volume.source ?? '', volume.target ?? ''];
  });
}

/** Compose durations: "45s", "1m30s", "500ms", "1h". */
function composeSeconds(duration: string | undefined): number {
  if (duration === undefined) return 10; // Docker's default stop timeout
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001, us: 0.000001 };
  let total = 0;
  for (const match of duration.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)) total += Number(match[1]) * units[match[2]!]!;
  return total;
}

function servesHttp(service: ComposeService): boolean {
  const command = words(service.command);
  if (command[0] !== undefined && command[0] !== 'start') return false;
  const rolesAt = command.findIndex((word) => word === '--roles' || word.startsWith('--roles='));
  if (rolesAt < 0) return true;
  const roles = command[rolesAt]!.includes('=') ? command[rolesAt]!.split('=')[1]! : (command[rolesAt + 1] ?? '');
  return roles.split(',').includes('http');
}

describe('compose.yaml', () => {
  const compose = parseYaml(read('compose.yaml')) as Compose;
  const services = compose.services;
  const namedVolumes = new Set(Object.keys(compose.volumes ?? {}));
  const dockerfileHealthcheck = parseDockerfile(read('Dockerfile')).some(
    (instruction) => instruction.keyword === 'HEALTHCHECK' && instruction.args.includes('/healthz'),
  );
  const daemon = services['carrier-sync']!;
  const usesImage = (service: ComposeService): boolean => service.build !== undefined || service.image === daemon.image;

  it('runs Redis 7 with AOF on, noeviction and a data volume', () => {
    const redis = services.redis!;
    expect(redis.image).toMatch(/^redis:7\b/);
    const command = words(redis.command).join(' ');
    expect(command).toMatch(/--appendonly\s+yes\b/);
    expect(command).toMatch(/--maxmemory-policy\s+noeviction\b/);
    const data = mountsOf(redis).find(([, target]) => target === '/data');
    expect(data, 'a volume on /data').toBeDefined();
    expect(namedVolumes.has(data![0]) || data![0].startsWith('.') || data![0].startsWith('/')).toBe(true);
    expect(redis.healthcheck?.test).toBeDefined();
  });

  it('runs the daemon from the Dockerfile with a spool volume, Redis and the sandbox API', () => {
    expect(daemon.build).toBeDefined();
    const command = words(daemon.command);
    expect(command[0] ?? 'start').toBe('start');
    const spool = mountsOf(daemon).find(([, target]) => target === '/spool');
    expect(spool, 'a volume on /spool').toBeDefined();
    expect(namedVolumes.has(spool![0]) || spool![0].startsWith('.') || spool![0].startsWith('/')).toBe(true);
    const env = environmentOf(daemon);
    expect(env.get('REDIS_URL')).toMatch(/^redis:\/\/redis:\d+/);
    expect(env.get('CARRIER_SYNC_API_URL')).toBe('http://sandbox:4010');
    expect(env.get('CARRIER_SYNC_CARRIER_KEY')).toBe('sandbox-carrier-key-1');
    const ports = (daemon.ports ?? []).map((port) => (typeof port === 'object' ? String(port.target) : String(port)));
    expect(ports.some((port) => port === String(defaults.http.port) || port.endsWith(`:${defaults.http.port}`))).toBe(true);
    const dependsOn = daemon.depends_on as Record<string, { condition?: string }>;
    expect(dependsOn.redis?.condition).toBe('service_healthy');
    // The watcher's spool id is derived from hostname + path: it must survive a re-created container.
    expect(daemon.hostname).toMatch(/\S/);
    // Nothing is written outside the spool volume: the root filesystem is read-only.
    expect(daemon.read_only).toBe(true);
    expect(services['worker']?.read_only).toBe(true);
  });

  it('gives the daemon a health check on /healthz (its own or the image HEALTHCHECK)', () => {
    expect(daemon.healthcheck?.disable).not.toBe(true);
    const own = daemon.healthcheck?.test === undefined ? undefined : words(daemon.healthcheck.test).join(' ');
    expect(own === undefined ? dockerfileHealthcheck : own.includes('/healthz')).toBe(true);
  });

  it('lets every process of the image finish its grace period before Docker kills it', () => {
    for (const [name, service] of Object.entries(services).filter(([, service]) => usesImage(service) && words(service.command)[0] !== 'sandbox')) {
      expect(composeSeconds(service.stop_grace_period), `${name}: stop_grace_period`).toBeGreaterThan(graceSeconds);
    }
  });

  it('overrides the /healthz check where the ops server does not run', () => {
    for (const [name, service] of Object.entries(services).filter(([, service]) => usesImage(service) && !servesHttp(service))) {
      const test = service.healthcheck?.test === undefined ? undefined : words(service.healthcheck.test).join(' ');
      expect(service.healthcheck?.disable === true || (test !== undefined && !test.includes(`:${defaults.http.port}/healthz`)), `${name}: health check`).toBe(
        true,
      );
    }
  });

  it('runs the sandbox API from the same image', () => {
    const sandbox = services.sandbox!;
    expect(usesImage(sandbox)).toBe(true);
    expect(words(sandbox.command)).toEqual(['sandbox', '--port', '4010', '--host', '0.0.0.0']);
  });

  it('has a worker-only scale-out example under the `scale` profile', () => {
    const workers = Object.values(services).filter((service) => service.profiles?.includes('scale'));
    expect(workers.length).toBeGreaterThan(0);
    for (const worker of workers) {
      expect(usesImage(worker)).toBe(true);
      expect(words(worker.command)).toEqual(['start', '--roles', 'worker']);
      expect(environmentOf(worker).get('CARRIER_SYNC_PREFIX') ?? 'carrier-sync').toBe(environmentOf(daemon).get('CARRIER_SYNC_PREFIX') ?? 'carrier-sync');
      expect(environmentOf(worker).get('REDIS_URL')).toBe(environmentOf(daemon).get('REDIS_URL'));
    }
  });

  it('holds no real secret: only the sandbox seed keys, or ${…} from the environment', () => {
    const seed = JSON.parse(read('config/sandbox-seed.json')) as { carriers: Array<{ key: string }>; seller_groups: Array<{ key: string }> };
    const sandboxKeys = new Set([...seed.carriers, ...seed.seller_groups].map(({ key }) => key));
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of environmentOf(service)) {
        if (/url$/i.test(key)) expect(value, `${name}: ${key} carries no password`).not.toMatch(/\/\/[^/@]*:[^/@]+@/);
        if (!/(KEY|TOKEN|PASSWORD|SECRET)$/i.test(key)) continue;
        expect(sandboxKeys.has(value) || /^\$\{[A-Z0-9_]+(:?[-?][^}]*)?\}$/.test(value), `${name}: ${key}`).toBe(true);
      }
    }
  });
});

// ---- systemd unit -------------------------------------------------------------------------------

/** `Key=value` lines of one section; repeated keys keep every value. */
function unitSection(text: string, section: string): Map<string, string[]> {
  const entries = new Map<string, string[]>();
  let current = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = header[1]!;
      continue;
    }
    if (current !== section) continue;
    const at = line.indexOf('=');
    if (at < 0) continue;
    const key = line.slice(0, at).trim();
    entries.set(key, [...(entries.get(key) ?? []), line.slice(at + 1).trim()]);
  }
  return entries;
}

/** systemd time spans: "45" (seconds), "45s", "1min 30s", "2m", "500ms". */
function systemdSeconds(span: string): number {
  if (/^\d+(\.\d+)?$/.test(span)) return Number(span);
  const units: Record<string, number> = { us: 0.000001, ms: 0.001, s: 1, sec: 1, m: 60, min: 60, h: 3600, hr: 3600 };
  let total = 0;
  for (const match of span.matchAll(/(\d+(?:\.\d+)?)\s*(us|ms|sec|s|min|m|hr|h)\b/g)) total += Number(match[1]) * units[match[2]!]!;
  return total;
}

describe('docs/deploy/carrier-sync.service', () => {
  const service = unitSection(read('docs/deploy/carrier-sync.service'), 'Service');
  const one = (key: string): string | undefined => service.get(key)?.at(-1);

  it('stops with SIGTERM and waits longer than shutdown.graceMs', () => {
    expect(one('KillSignal') ?? 'SIGTERM').toBe('SIGTERM');
    const timeout = one('TimeoutStopSec');
    expect(timeout).toBeDefined();
    expect(systemdSeconds(timeout!)).toBeGreaterThan(graceSeconds);
  });

  it('runs the built daemon as an unprivileged user, restarting on failure', () => {
    expect(one('Type')).toBe('simple');
    expect(['root', '0', undefined]).not.toContain(one('User'));
    expect(one('WorkingDirectory')).toBe('/opt/carrier-sync');
    expect(one('EnvironmentFile')?.replace(/^-/, '')).toBe('/etc/carrier-sync/env');
    const exec = one('ExecStart')!.split(/\s+/);
    expect(exec[0]).toMatch(/^\/.*\/node$/);
    expect(exec.slice(1, 3 + NODE_FLAGS.length)).toEqual([...NODE_FLAGS, 'dist/src/main.js', 'start']);
    // The environment of the bin's shebang, which this line's node does not read.
    for (const entry of LAUNCH_ENV) expect(service.get('Environment') ?? []).toContain(entry);
    expect(one('Restart')).toBe('on-failure');
  });

  it('is hardened, with the spool writable', () => {
    expect(one('NoNewPrivileges')).toBe('true');
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('PrivateTmp')).toBe('true');
    const writable = (service.get('ReadWritePaths') ?? []).flatMap((paths) => paths.split(/\s+/)).map((path) => path.replace(/^-/, ''));
    const spoolDir =
      (service.get('Environment') ?? []).map((entry) => /^"?CARRIER_SYNC_SPOOL_DIR=([^"\s]+)/.exec(entry)?.[1]).find(Boolean) ??
      join(one('WorkingDirectory')!, 'spool');
    expect(writable).toContain(spoolDir);
    expect(writable.some((path) => /\/var$/.test(path))).toBe(true);
    expect(service.has('MemoryDenyWriteExecute')).toBe(false); // V8's JIT
  });
});

// ---- .ci/run ------------------------------------------------------------------------------------

describe('.ci/run', () => {
  const script = read('.ci/run');
  /** The script's commands: comment lines and trailing comments dropped. */
  const code = script
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .map((line) => line.replace(/\s+#\s.*$/, ''));
  const lineOf = (pattern: RegExp): number => code.findIndex((line) => pattern.test(line));

  it('ends no process by name (it may not have started it)', () => {
    const byName = [
      /\bpkill\b/,
      /\bkillall5?\b/,
      /\bpgrep\b/,
      /\bpidof\b/,
      /\bkill\b[^\n]*(\$\(|`)/,
      /\bsystemctl\s+(stop|kill|restart)\b/,
      /\bservice\s+\S+\s+(stop|restart)\b/,
      /\bfuser\b[^\n]*\s-k/,
    ];
    const offending = code.filter((line) => byName.some((pattern) => pattern.test(line)));
    expect(offending).toEqual([]);
  });

  it('installs packages with a policy-rc.d that forbids starting services, only for the install', () => {
    const install = lineOf(/apt-get install/);
    expect(install).toBeGreaterThan(0);
    expect(script).toMatch(/policy=\/usr\/sbin\/policy-rc\.d/);
    const deny = lineOf(/printf '#!\/bin\/sh\\nexit 101\\n'.*"\$policy"/);
    const trapSet = lineOf(/^\s*trap restore_policy EXIT\b/);
    const restore = code.findIndex((line, index) => index > install && /^\s*restore_policy\s*$/.test(line));
    expect({ deny: deny >= 0 && deny < install, trap: trapSet >= 0 && trapSet < install, restoredAfter: restore > install }).toEqual({
      deny: true,
      trap: true,
      restoredAfter: true,
    });
    // An existing policy-rc.d is moved aside and put back, not overwritten.
    expect(script).toMatch(/mv -f "\$policy" "\$saved"/);
    expect(script).toMatch(/mv -f "\$saved" "\$policy"/);
  });
});

describe('launch lines', () => {
  const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string>; scripts: Record<string, string> };

  it("the bin's shebang runs node with a small young generation, a tight old one and glibc's malloc thresholds fixed (RSS targets, BENCHMARKS.md)", () => {
    expect(read('src/main.ts').split('\n')[0]).toBe(
      '#!/usr/bin/env -S MALLOC_TRIM_THRESHOLD_=1048576 node --max-semi-space-size=4 --heap-growing-percent=50 --v8-pool-size=1',
    );
    expect(LAUNCH_ENV).toEqual(['MALLOC_TRIM_THRESHOLD_=1048576']);
    expect(NODE_FLAGS).toEqual(['--max-semi-space-size=4', '--heap-growing-percent=50', '--v8-pool-size=1']);
  });

  it('npm start execs the bin with the same environment and node flags as its shebang', () => {
    // exec (and env execs node in its place): the daemon replaces npm's shell, so the signals npm
    // forwards reach it (test/e2e/npm-start.test.ts).
    expect(pkg.scripts['start']).toBe(['exec', 'env', ...LAUNCH_ENV, 'node', ...NODE_FLAGS, pkg.bin['carrier-sync'], 'start'].join(' '));
  });

  it('the built bin keeps the shebang and runs with its flags', () => {
    const bin = join(ROOT, pkg.bin['carrier-sync']!); // built by the global setup (test/support/global-build.ts)
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe(read('src/main.ts').split('\n')[0]);
    // What the kernel runs for that line: env splits it (-S) and node takes the flags.
    const probe = spawnSync(
      '/usr/bin/env',
      ['-S', `${LAUNCH_ENV.join(' ')} node ${NODE_FLAGS.join(' ')} -p process.execArgv.concat(process.env.MALLOC_TRIM_THRESHOLD_).join()`],
      { encoding: 'utf8' },
    );
    expect(probe.status).toBe(0);
    expect(probe.stdout.trim().split(',')).toEqual([...NODE_FLAGS, '-p', expect.any(String), '1048576']);
  });
});

describe('code format', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

  it('npm run check runs the Prettier check, the typecheck and the lint before the tests', () => {
    expect(pkg.scripts['check']).toBe('node test/tools/check.mjs');
    const runner = readFileSync(join(ROOT, 'test/tools/check.mjs'), 'utf8');
    expect(runner).toContain("const CHECKS = ['typecheck', 'lint', 'format:check'];");
    // The tests start only after every check has ended and none failed.
    expect(runner.indexOf("npmRun('test'")).toBeGreaterThan(runner.indexOf('process.exit(failed)'));
    expect(pkg.scripts['format:check']).toBe('prettier --check .');
  });

  it('the Prettier check fails on a misformatted source file and passes once it is formatted', () => {
    const dir = mkdtempSync(join(ROOT, '.prettier-check-'));
    try {
      const file = join(dir, 'misformatted.ts');
      writeFileSync(file, 'export const x = {a:1,\n    b:"two"}\n');
      const check = (): number =>
        spawnSync(process.execPath, [join(ROOT, 'node_modules/prettier/bin/prettier.cjs'), '--check', file], { cwd: ROOT, encoding: 'utf8' }).status ?? -1;
      expect(check()).not.toBe(0);
      writeFileSync(file, "export const x = { a: 1, b: 'two' };\n");
      expect(check()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
