/**
 * Redis data nodes for the topology starters (redis-topologies.ts): each from Debian's
 * redis-server on a free loopback port, stopped by its own pid, with `--enable-debug-command local`
 * (a test may `DEBUG SLEEP` a replica to make it lag), and optionally TLS (a private CA, see
 * tls-certs.ts) and an ACL user with a password, the default user then off. Also one node alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './redis-process.js';
import { makeTestCerts, type TestCerts } from './tls-certs.js';

export interface TopologyOptions {
  tls?: boolean;
  /** An ACL user (`~* &* +@all`) with a password on the data nodes; their default user is then off. */
  acl?: { user: string; password: string };
  /** Sentinel only: the sentinels' own password (`requirepass`). */
  sentinelPassword?: string;
}

export interface Shared {
  dir: string;
  certs: TestCerts | undefined;
  children: ChildProcess[];
  options: TopologyOptions;
}

export async function openShared(options: TopologyOptions): Promise<Shared> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-topology-'));
  return { dir, certs: options.tls === true ? await makeTestCerts(dir) : undefined, children: [], options };
}

/**
 * Spawns redis-server and resolves once its log says it is ready (`ready`: a line it prints then).
 * Its output is read to the end (a full pipe would stall it), but only watched until then: the
 * exit listener of a later stop must not be taken off by a line the node logs while it stops.
 */
export function spawnRedis(shared: Shared, args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  shared.children.push(child);
  child.stderr.resume();
  return new Promise((resolve, reject) => {
    let output = '';
    const onExit = (code: number | null): void => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      reject(new Error(`redis-server exited (${code}):\n${output}`));
    };
    const onData = (chunk: string): void => {
      if (output.length < 20_000) output += chunk;
      if (!output.includes(ready)) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout.off('data', onData);
      child.stdout.resume();
      resolve(child);
    };
    const timer = setTimeout(() => reject(new Error(`redis-server ${args[0] ?? ''} not ready in 15 s:\n${output}`)), 15_000);
    child.once('exit', onExit);
    child.stdout.setEncoding('utf8').on('data', onData);
  });
}

/** Arguments every data node shares: loopback, no disk, debug, TLS and the ACL user as asked. */
export function dataNodeArgs(shared: Shared, port: number): string[] {
  const { certs, options } = shared;
  const acl = options.acl;
  return [
    ...(certs === undefined ? ['--port', String(port)] : certs.serverArgs(port)),
    ...['--bind', '127.0.0.1', '--dir', shared.dir, '--save', '', '--appendonly', 'no', '--enable-debug-command', 'local'],
    ...(acl === undefined
      ? []
      : [
          '--user',
          acl.user,
          'on',
          `>${acl.password}`,
          '~*',
          '&*',
          '+@all',
          '--user',
          'default',
          'off',
          '--masteruser',
          acl.user,
          '--masterauth',
          acl.password,
        ]),
  ];
}

/** An admin connection to one node, as the harness (not the daemon) reaches it. */
export function adminOf(topology: { certs: TestCerts | undefined; options: TopologyOptions }, port: number): Redis {
  const { certs, options } = topology;
  const admin = new Redis({
    host: '127.0.0.1',
    port,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    ...(options.acl === undefined ? {} : { username: options.acl.user, password: options.acl.password }),
    ...(certs === undefined ? {} : { tls: { ca: [readFileSync(certs.caFile, 'utf8')] } }),
  });
  admin.on('error', () => {});
  return admin;
}

/** `redis-cli` arguments for TLS and the ACL user. */
export function cliArgs(shared: Shared): string[] {
  const { certs, options } = shared;
  return [
    ...(certs === undefined ? [] : ['--tls', '--cacert', certs.caFile]),
    ...(options.acl === undefined ? [] : ['--user', options.acl.user, '--pass', options.acl.password, '--no-auth-warning']),
  ];
}

/** `redis-cli` arguments to reach a sentinel: TLS, and the sentinels' own password. */
export function sentinelCliArgs(shared: Shared): string[] {
  const { certs, options } = shared;
  return [
    ...(certs === undefined ? [] : ['--tls', '--cacert', certs.caFile]),
    ...(options.sentinelPassword === undefined ? [] : ['--pass', options.sentinelPassword, '--no-auth-warning']),
  ];
}

export async function stopAll(shared: Shared): Promise<void> {
  await Promise.all(
    shared.children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      try {
        process.kill(child.pid!, 'SIGKILL');
      } catch {
        return; // it exited on its own a moment ago
      }
      await exited;
    }),
  );
  await rm(shared.dir, { recursive: true, force: true });
}

/** What a data-node URL looks like for the daemon: scheme, the ACL user. */
export function urlFor(shared: Shared, port: number): string {
  const acl = shared.options.acl;
  const auth = acl === undefined ? '' : `${encodeURIComponent(acl.user)}:${encodeURIComponent(acl.password)}@`;
  return `${shared.certs === undefined ? 'redis' : 'rediss'}://${auth}127.0.0.1:${port}`;
}

export interface SingleSet {
  /** REDIS_URL, with the user, password and TLS. */
  url: string;
  port: number;
  certs: TestCerts | undefined;
  options: TopologyOptions;
  close(): Promise<void>;
}

/** One data node alone (TLS and ACL as asked). */
export async function startSingle(options: TopologyOptions = {}): Promise<SingleSet> {
  const shared = await openShared(options);
  try {
    const port = await freePort();
    await spawnRedis(shared, dataNodeArgs(shared, port), 'Ready to accept connections');
    return { url: urlFor(shared, port), port, certs: shared.certs, options, close: () => stopAll(shared) };
  } catch (error) {
    await stopAll(shared);
    throw error;
  }
}
