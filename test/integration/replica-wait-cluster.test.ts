/**
 * On a Cluster, whether the deployment's slot has a replica is the master's own answer (`INFO
 * replication`, `connected_slaves`), not ioredis' slot table. The table lists the replicas that the
 * node it asked knew of at its last refresh (every 5 s, or after a MOVED); in the failover sweep's
 * Cluster seed 25 it lacked the replica for the first seconds of a run, and 41 answers were written
 * without waiting for a replica — the very writes a failover then loses. Here a real 6-node Cluster
 * (3 masters, a replica each) and a client whose table is made to lack the slot's replica, as after
 * such a refresh (Redis 7.0 leaves a replica out of CLUSTER SLOTS until it has been told the
 * replica's offset, so a fresh cluster's table often lacks it anyway): the view must still count it.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { watchReplicas } from '../../src/gate/replica-wait.js';
import { createKeys } from '../../src/store/keys.js';
import { silentLogger } from '../../src/log.js';
import { startClusterSet, type ClusterSet } from '../support/redis-topologies.js';
import { waitFor } from '../support/wait.js';

let set: ClusterSet;
let cluster: Cluster;
const keys = createKeys('{rwc}');

beforeAll(async () => {
  set = await startClusterSet();
  cluster = new Cluster(
    set.ports.map((port) => ({ host: '127.0.0.1', port })),
    { slotsRefreshInterval: 60_000 },
  );
  await cluster.ping();
}, 60_000);

afterAll(async () => {
  cluster?.disconnect();
  await set?.close();
});

it("counts the slot's replica from its master even when ioredis' slot table does not list it", async () => {
  const slot = Number(await cluster.cluster('KEYSLOT', keys.deploymentId));
  const [master] = cluster.slots[slot]!;
  // The table as read from a node that had not yet heard of the replica. (Here it often lacks it
  // already: Redis 7.0 leaves out of CLUSTER SLOTS a replica whose offset it has not yet been told.)
  for (let s = 0; s < cluster.slots.length; s += 1) if (cluster.slots[s]?.[0] === master) cluster.slots[s] = [master!];
  const { replicas: actual } = await set.nodesOf(keys.deploymentId);
  expect(actual, "the slot's master has its replica").toHaveLength(1);

  const replicas = watchReplicas(cluster, keys.deploymentId, silentLogger);
  try {
    await waitFor(() => replicas.replicas() > 0, { timeoutMs: 5000, what: 'the replica counted' });
    expect(replicas.replicas()).toBe(1);
    expect(cluster.slots[slot], 'the table still lacks it').toEqual([master]);
  } finally {
    await replicas.close();
  }
});
