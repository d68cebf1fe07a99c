/**
 * Production-shaped Redis for tests, all from Debian's redis-server on free loopback ports, each
 * stopped by its own pid at the end: one node alone, Sentinel (a primary, a replica and three sentinels) and
 * Cluster (3 masters, 3 replicas). Optionally with TLS (a private CA, see tls-certs.ts) and an ACL
 * user with a password, the default user then off. Every data node runs with
 * `--enable-debug-command local`, so a test can `DEBUG SLEEP` a replica to make it lag.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './global-redis.js';
import { makeTestCerts, type TestCerts } from './tls-certs.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

export interface TopologyOptions {
  tls?: boolean;
  /** An ACL user (`~* &* +@all`) with a password on the data nodes; their default user is then off. */
  acl?: { user: string; password: string };
  /** Sentinel only: the sentinels' own password (`requirepass`). */
  sentinelPassword?: string;
}

interface Shared {
  dir: string;
  certs: TestCerts | undefined;
  children: ChildProcess[];
  options: TopologyOptions;
}

async function openShared(options: TopologyOptions): Promise<Shared> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-topology-'));
  return { dir, certs: options.tls === true ? await makeTestCerts(dir) : undefined, children: [], options };
}

/** Spawns redis-server and resolves once its log says it is ready (`ready`: a line it prints then). */
function spawnRedis(shared: Shared, args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  shared.children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server ${args[0] ?? ''} not ready in 15 s:\n${output}`)), 15_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}):\n${output}`));
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (output.length < 20_000) output += chunk;
      if (output.includes(ready)) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve(child);
      }
    });
  });
}

/** Arguments every data node shares: loopback, no disk, debug, TLS and the ACL user as asked. */
function dataNodeArgs(shared: Shared, port: number): string[] {
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
function cliArgs(shared: Shared): string[] {
  const { certs, options } = shared;
  return [
    ...(certs === undefined ? [] : ['--tls', '--cacert', certs.caFile]),
    ...(options.acl === undefined ? [] : ['--user', options.acl.user, '--pass', options.acl.password, '--no-auth-warning']),
  ];
}

/** `redis-cli` arguments to reach a sentinel: TLS, and the sentinels' own password. */
function sentinelCliArgs(shared: Shared): string[] {
  const { certs, options } = shared;
  return [
    ...(certs === undefined ? [] : ['--tls', '--cacert', certs.caFile]),
    ...(options.sentinelPassword === undefined ? [] : ['--pass', options.sentinelPassword, '--no-auth-warning']),
  ];
}

async function stopAll(shared: Shared): Promise<void> {
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
function urlFor(shared: Shared, port: number): string {
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

export interface SentinelSet {
  name: string;
  /** CARRIER_SYNC_REDIS_SENTINELS. */
  sentinels: string;
  /** REDIS_URL: the data nodes' user, password and TLS (its host is not used to find the primary). */
  url: string;
  certs: TestCerts | undefined;
  options: TopologyOptions;
  primaryPort: number;
  replicaPort: number;
  sentinelPorts: number[];
  /** The primary's port as the sentinels see it now. */
  currentPrimaryPort(): Promise<number>;
  /** kill -9 of the data node on `port`. */
  kill(port: number): Promise<void>;
  close(): Promise<void>;
}

export async function startSentinelSet(options: TopologyOptions = {}): Promise<SentinelSet> {
  const shared = await openShared(options);
  try {
    const [primaryPort, replicaPort] = [await freePort(), await freePort()];
    await spawnRedis(shared, dataNodeArgs(shared, primaryPort), 'Ready to accept connections');
    await spawnRedis(shared, [...dataNodeArgs(shared, replicaPort), '--replicaof', '127.0.0.1', String(primaryPort)], 'Ready to accept connections');
    const sentinelPorts = [await freePort(), await freePort(), await freePort()];
    for (const port of sentinelPorts) {
      const file = join(shared.dir, `sentinel-${port}.conf`);
      await writeFile(file, sentinelConf(shared, port, primaryPort));
      await spawnRedis(shared, [file, '--sentinel'], '+monitor master');
    }
    const set: SentinelSet = {
      name: 'mymaster',
      sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      url: urlFor(shared, primaryPort),
      certs: shared.certs,
      options,
      primaryPort,
      replicaPort,
      sentinelPorts,
      async currentPrimaryPort() {
        const { stdout } = await run('redis-cli', [
          '-p',
          String(sentinelPorts[0]),
          ...sentinelCliArgs(shared),
          'SENTINEL',
          'get-master-addr-by-name',
          'mymaster',
        ]);
        return Number(stdout.trim().split('\n')[1]);
      },
      async kill(port) {
        const index = [primaryPort, replicaPort].indexOf(port);
        const child = shared.children[index]!;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        process.kill(child.pid!, 'SIGKILL');
        await exited;
      },
      close: () => stopAll(shared),
    };
    // The sentinels know the replica (from the primary's INFO) before a test may fail anything over.
    await waitFor(
      async () => {
        const { stdout } = await run('redis-cli', ['-p', String(sentinelPorts[0]), ...sentinelCliArgs(shared), 'SENTINEL', 'replicas', 'mymaster']);
        return stdout.includes(String(replicaPort)) && /master-link-status\s+ok/.test(stdout);
      },
      { timeoutMs: 20_000, what: 'the sentinels see the replica' },
    );
    return set;
  } catch (error) {
    await stopAll(shared);
    throw error;
  }
}

function sentinelConf(shared: Shared, port: number, primaryPort: number): string {
  const { certs, options } = shared;
  const lines = [
    ...(certs === undefined
      ? [`port ${port}`]
      : [
          `port 0`,
          `tls-port ${port}`,
          `tls-cert-file ${certs.certFile}`,
          `tls-key-file ${certs.keyFile}`,
          `tls-ca-cert-file ${certs.caFile}`,
          'tls-auth-clients no',
          'tls-replication yes',
        ]),
    'bind 127.0.0.1',
    `dir ${shared.dir}`,
    `sentinel monitor mymaster 127.0.0.1 ${primaryPort} 2`,
    // Fast enough for a test: down after 1 s, a failover within a few seconds.
    'sentinel down-after-milliseconds mymaster 1000',
    'sentinel failover-timeout mymaster 2000',
    'sentinel parallel-syncs mymaster 1',
    ...(options.acl === undefined ? [] : [`sentinel auth-user mymaster ${options.acl.user}`, `sentinel auth-pass mymaster ${options.acl.password}`]),
    // The sentinels' own password (clients and the other sentinels give it).
    ...(options.sentinelPassword === undefined ? [] : [`requirepass ${options.sentinelPassword}`, `sentinel sentinel-pass ${options.sentinelPassword}`]),
  ];
  return `${lines.join('\n')}\n`;
}

export interface ClusterSet {
  /** REDIS_URL: the seed nodes, comma-separated, with the user, password and TLS. */
  url: string;
  certs: TestCerts | undefined;
  options: TopologyOptions;
  ports: number[];
  /** The master and its replica serving `key`'s slot now. */
  nodesOf(key: string): Promise<{ master: number; replicas: number[] }>;
  kill(port: number): Promise<void>;
  close(): Promise<void>;
}

export async function startClusterSet(options: TopologyOptions = {}): Promise<ClusterSet> {
  const shared = await openShared(options);
  try {
    const ports: number[] = [];
    for (let i = 0; i < 6; i += 1) ports.push(await freePort());
    await Promise.all(
      ports.map((port) =>
        spawnRedis(
          shared,
          [
            ...dataNodeArgs(shared, port),
            ...[
              '--cluster-enabled',
              'yes',
              '--cluster-config-file',
              join(shared.dir, `nodes-${port}.conf`),
              '--cluster-node-timeout',
              '2000',
              '--cluster-replica-validity-factor',
              '0',
            ],
            ...(shared.certs === undefined ? [] : ['--tls-cluster', 'yes']),
          ],
          'Ready to accept connections',
        ),
      ),
    );
    await run('redis-cli', [
      ...cliArgs(shared),
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    const cli = (port: number, ...args: string[]) => run('redis-cli', ['-p', String(port), ...cliArgs(shared), ...args]).then((r) => r.stdout);
    await waitFor(async () => (await Promise.all(ports.map((port) => cli(port, 'CLUSTER', 'INFO')))).every((info) => info.includes('cluster_state:ok')), {
      timeoutMs: 30_000,
      what: 'cluster_state:ok on every node',
    });
    const killed = new Set<number>();
    const set: ClusterSet = {
      url: ports.map((port) => urlFor(shared, port)).join(','),
      certs: shared.certs,
      options,
      ports,
      async nodesOf(key) {
        const alive = ports.find((port) => !killed.has(port))!;
        const slot = Number((await cli(alive, 'CLUSTER', 'KEYSLOT', key)).trim());
        const lines = (await cli(alive, 'CLUSTER', 'NODES')).trim().split('\n');
        const byId = new Map(lines.map((line) => [line.split(' ')[0]!, line]));
        const master = lines.find(
          (line) =>
            /\bmaster\b/.test(line) &&
            !/\bfail\b/.test(line) &&
            line
              .split(' ')
              .slice(8)
              .some((range) => {
                const [from, to] = range.split('-').map(Number);
                return slot >= from! && slot <= (to ?? from)!;
              }),
        );
        if (master === undefined) throw new Error(`no master serves slot ${slot}`);
        const portOf = (line: string) => Number(/:(\d+)@/.exec(line.split(' ')[1]!)?.[1]);
        const masterId = master.split(' ')[0]!;
        const replicas = [...byId.values()].filter((line) => line.split(' ')[3] === masterId).map(portOf);
        return { master: portOf(master), replicas };
      },
      async kill(port) {
        const child = shared.children[ports.indexOf(port)]!;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        process.kill(child.pid!, 'SIGKILL');
        await exited;
        killed.add(port);
      },
      close: () => stopAll(shared),
    };
    return set;
  } catch (error) {
    await stopAll(shared);
    throw error;
  }
}
