/**
 * What Redis looks like from here, for `status` and the overview: the kind (single, sentinel,
 * cluster), the primary's address, its replicas, and the last failover.
 *
 * The primary is the node this process's connection reached (CLIENT INFO's laddr: the address
 * it dialled, which through Sentinel is the primary the sentinels named); on a Cluster, the master
 * serving the prefix's hash slot. Its replicas come from its INFO replication.
 *
 * The last failover is carrier-sync's own record, not Sentinel's (Sentinel keeps no time of its
 * last failover; INFO only says that a node was promoted, not when): each process notes the
 * primary it reaches, at every (re)connect and every `status`, in one hash under the prefix.
 *
 * The rule (docs/redis-failover.md), the same in single, Sentinel and Cluster mode: a failover is
 * a promotion, nothing else. The primary now reached has another replication id than the one noted
 * AND was promoted: INFO's second_repl_offset is set, so it carries on another primary's history
 * (Sentinel's or Cluster's failover, a managed service's behind one name, REPLICAOF NO ONE). It is
 * timed when the first process saw it. Not a failover: a primary restarted (a new replication id,
 * never promoted), on the same address or another one (the managed redis-server back on a new port
 * with the same data), or reached by another address (a new DNS name, a proxy).
 */
import type { Translate } from '../i18n/translate.js';
import type { RedisKind, RedisTarget } from '../config/redis-target.js';
import type { RedisConnection } from './redis.js';
import { defineScript } from './script.js';
import { infoNumber, infoReplicas, parseInfo } from './redis-info.js';

export interface Topology {
  kind: RedisKind;
  /** host:port of the primary (the prefix slot's master on a Cluster); null when unreadable. */
  primary: string | null;
  replicas: Array<{ address: string; state: string; lagSec: number | null }>;
  lastFailover: { at: string; from: string; to: string } | null;
}

/**
 * KEYS: [1] the topology hash (fields primary, promoted, seenAt, failoverAt, failoverFrom)
 * ARGV: [1] the primary's address, [2] its replication id, [3] '1' when it was promoted, [4] now (ms)
 * returns 1 when this call recorded a failover, else 0
 */
const NOTE_PRIMARY = defineScript(
  'notePrimary',
  `
local topology = KEYS[1]
local address, replId, promoted, nowMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local previous = redis.call('HGET', topology, 'primary')
local previousId = redis.call('HGET', topology, 'replId')
if previous == address and previousId == replId then return 0 end
redis.call('HSET', topology, 'primary', address, 'replId', replId, 'seenAt', nowMs)
if previous and previousId ~= replId and promoted == '1' then
  redis.call('HSET', topology, 'failoverAt', nowMs, 'failoverFrom', previous)
  return 1
end
return 0
`,
);

interface PrimaryView {
  address: string;
  replId: string;
  isPromoted: boolean;
  replicas: Topology['replicas'];
}

/** Reads the primary as this connection sees it, and notes it (see the header); true on a failover. */
export async function notePrimary(redis: RedisConnection, target: RedisTarget, topologyKey: string, prefix: string): Promise<boolean> {
  const view = await readPrimary(redis, target, prefix);
  if (view === null) return false;
  const recorded = await NOTE_PRIMARY(redis, [topologyKey], [view.address, view.replId, view.isPromoted ? '1' : '0', Date.now()]);
  return recorded === 1;
}

export async function readTopology(redis: RedisConnection, target: RedisTarget, topologyKey: string, prefix: string): Promise<Topology> {
  const view = await readPrimary(redis, target, prefix).catch(() => null);
  if (view !== null) await NOTE_PRIMARY(redis, [topologyKey], [view.address, view.replId, view.isPromoted ? '1' : '0', Date.now()]);
  const record = await redis.hgetall(topologyKey);
  const failoverAt = Number(record['failoverAt']);
  return {
    kind: target.kind,
    primary: view?.address ?? null,
    replicas: view?.replicas ?? [],
    lastFailover:
      record['failoverAt'] === undefined ? null : { at: new Date(failoverAt).toISOString(), from: record['failoverFrom'] ?? '?', to: record['primary'] ?? '?' },
  };
}

async function readPrimary(redis: RedisConnection, target: RedisTarget, prefix: string): Promise<PrimaryView | null> {
  const node = target.kind === 'cluster' ? await slotMaster(redis, prefix) : redis;
  if (node === null) return null;
  const [clientInfo, replication] = await Promise.all([node.call('CLIENT', 'INFO') as Promise<string>, node.info('replication')]);
  const laddr = /\bladdr=(\S+)/.exec(clientInfo)?.[1];
  if (laddr === undefined) return null;
  // Through a Unix socket Redis gives the socket's path and port 0.
  const address = laddr.startsWith('/') ? `unix://${laddr.replace(/:0$/, '')}` : laddr;
  const info = parseInfo(replication);
  return {
    address,
    replId: info.get('master_replid') ?? '',
    isPromoted: (infoNumber(info, 'second_repl_offset') ?? -1) >= 0,
    replicas: infoReplicas(info).map((fields) => ({
      address: `${fields['ip']}:${fields['port']}`,
      state: fields['state'] ?? '?',
      lagSec: fields['lag'] === undefined ? null : Number(fields['lag']),
    })),
  };
}

/**
 * The connection to the master serving the prefix's hash slot, from ioredis' own slot map: the node
 * this process's commands go to (a node's CLUSTER SLOTS may still name a master that is gone).
 */
async function slotMaster(redis: RedisConnection, prefix: string) {
  if (!('nodes' in redis)) return redis;
  const slot = Number(await redis.cluster('KEYSLOT', prefix));
  const owner = redis.slots[slot]?.[0];
  return redis.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === owner) ?? null;
}

/** One line for `status`: `sentinel, primary 10.0.0.5:6379; replicas 10.0.0.6:6379 (online, lag 0 s); last failover …`. */
/** The topology in one line a person reads, in the language of `t` (status, the overview). */
export function describeTopology(topology: Topology, t: Translate, timeText: (iso: string) => string = (iso) => iso): string {
  const replicas =
    topology.replicas.length === 0
      ? t('ui.redis.noReplicas')
      : t('ui.redis.replicas', {
          list: topology.replicas
            .map((r) =>
              r.lagSec === null
                ? t('ui.redis.replica', { address: r.address, state: r.state })
                : t('ui.redis.replicaLag', { address: r.address, state: r.state, lag: String(r.lagSec) }),
            )
            .join(', '),
        });
  const last = topology.lastFailover;
  const failover = last === null ? t('ui.redis.noFailover') : t('ui.redis.lastFailover', { at: timeText(last.at), from: last.from, to: last.to });
  return t('ui.redis.line', { kind: t('ui.redis.kind', { kind: topology.kind }), primary: topology.primary ?? t('ui.redis.unknown'), replicas, failover });
}
