/** The one INFO reader (store/redis-info.ts), on INFO text as redis-server writes it (CRLF line ends). */
import { describe, expect, it } from 'vitest';
import { infoNumber, infoReplicas, parseInfo } from '../../src/store/redis-info.js';

const REPLICATION = [
  '# Replication',
  'role:master',
  'connected_slaves:2',
  'slave0:ip=10.0.0.5,port=6379,state=online,offset=1234,lag=0',
  'slave1:ip=10.0.0.7,port=6380,state=wait_bgsave,offset=0,lag=1',
  'master_replid:8f1c2b6a0d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a',
  'second_repl_offset:-1',
  '',
  '# Memory',
  'used_memory:1048576',
  'maxmemory:0',
  'maxmemory_policy:noeviction',
  '',
].join('\r\n');

describe('parseInfo', () => {
  it('reads fields by name across sections, without their line ends', () => {
    const info = parseInfo(REPLICATION);
    expect(info.get('master_replid')).toBe('8f1c2b6a0d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a');
    expect(info.get('maxmemory_policy')).toBe('noeviction');
    expect(infoNumber(info, 'connected_slaves')).toBe(2);
    expect(infoNumber(info, 'second_repl_offset')).toBe(-1);
    expect(infoNumber(info, 'used_memory')).toBe(1_048_576);
    expect(infoNumber(info, 'role')).toBeNull();
    expect(infoNumber(info, 'absent')).toBeNull();
    expect(info.has('# Replication')).toBe(false);
  });

  it('reads the replicas’ lines as their key=value pairs', () => {
    expect(infoReplicas(parseInfo(REPLICATION))).toEqual([
      { ip: '10.0.0.5', port: '6379', state: 'online', offset: '1234', lag: '0' },
      { ip: '10.0.0.7', port: '6380', state: 'wait_bgsave', offset: '0', lag: '1' },
    ]);
    expect(infoReplicas(parseInfo('role:master\r\nconnected_slaves:0\r\n'))).toEqual([]);
  });
});
