/**
 * Production-shaped Redis for tests (issue 28 item 6): Sentinel (a primary, a replica and three
 * sentinels) and Cluster (3 masters, 3 replicas), built from the data nodes of redis-nodes.ts
 * (TLS and an ACL user as asked), every process stopped by its own pid at the end.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts } from './redis-process.js';
import { cliArgs, dataNodeArgs, openShared, sentinelCliArgs, spawnRedis, stopAll, urlFor, type Shared, type TopologyOptions } from './redis-nodes.js';
import type { TestCerts } from './tls-certs.js';
import { waitFor } from './wait.js';

export { adminOf, startSingle, type SingleSet, type TopologyOptions } from './redis-nodes.js';

const run = promisify(execFile);

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
    const [primaryPort, replicaPort] = (await freePorts(2)) as [number, number];
    await spawnRedis(shared, dataNodeArgs(shared, primaryPort), 'Ready to accept connections');
    await spawnRedis(shared, [...dataNodeArgs(shared, replicaPort), '--replicaof', '127.0.0.1', String(primaryPort)], 'Ready to accept connections');
    const sentinelPorts = await freePorts(3);
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

/**
 * One cluster node on a free port with its bus on another (`--cluster-port`; the default, the port
 * + 10,000, is never checked). Another process can still take a port between its check and the
 * node's bind: the node is then started again on new ports, up to three times.
 */
async function startClusterNode(shared: Shared, firstPorts: [number, number]): Promise<{ port: number; child: ChildProcess }> {
  let [port, busPort] = firstPorts;
  for (let attempt = 1; ; attempt += 1) {
    try {
      const child = await spawnRedis(
        shared,
        [
          ...dataNodeArgs(shared, port),
          ...['--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-config-file', join(shared.dir, `nodes-${port}.conf`)],
          ...['--cluster-node-timeout', '2000', '--cluster-replica-validity-factor', '0'],
          ...(shared.certs === undefined ? [] : ['--tls-cluster', 'yes']),
        ],
        'Ready to accept connections',
      );
      return { port, child };
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('Address already in use')) throw error;
      [port, busPort] = (await freePorts(2)) as [number, number];
    }
  }
}

export async function startClusterSet(options: TopologyOptions = {}): Promise<ClusterSet> {
  const shared = await openShared(options);
  try {
    const free = await freePorts(12);
    const nodes = await Promise.all(Array.from({ length: 6 }, (_, i) => startClusterNode(shared, [free[2 * i]!, free[2 * i + 1]!])));
    const ports = nodes.map((node) => node.port);
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
    // Every replica through its first full sync: until then a promotion would start from nothing.
    await waitFor(
      async () =>
        (await Promise.all(ports.map((port) => cli(port, 'INFO', 'replication')))).every(
          (info) => info.includes('role:master') || (info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0')),
        ),
      { timeoutMs: 30_000, what: 'every replica in sync' },
    );
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
        const child = nodes[ports.indexOf(port)]!.child;
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
