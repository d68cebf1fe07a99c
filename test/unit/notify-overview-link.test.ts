/**
 * A digest links the overview only at an address its reader can open (issue 45: a digest linked
 * http://vm:8080/ui to a server listening on 127.0.0.1 only).
 */
import { expect, it } from 'vitest';
import { overviewLinkOf } from '../../src/runtime/roles/notify-role.js';

it('links nothing while the ops server listens on loopback only, or on a free port', () => {
  expect(overviewLinkOf(null, { host: '127.0.0.1', port: 8080 }, 'vm')).toBeNull();
  expect(overviewLinkOf(null, { host: 'localhost', port: 8080 }, 'vm')).toBeNull();
  expect(overviewLinkOf(null, { host: '::1', port: 8080 }, 'vm')).toBeNull();
  expect(overviewLinkOf(null, { host: '0.0.0.0', port: 0 }, 'vm')).toBeNull();
});

it('links this host by name when it listens on every address, or the address it listens on', () => {
  expect(overviewLinkOf(null, { host: '0.0.0.0', port: 8080 }, 'vm')).toBe('http://vm:8080/ui');
  expect(overviewLinkOf(null, { host: '10.0.0.7', port: 9000 }, 'vm')).toBe('http://10.0.0.7:9000/ui');
  expect(overviewLinkOf(null, { host: 'fd00::7', port: 9000 }, 'vm')).toBe('http://[fd00::7]:9000/ui');
});

it('links the configured URL (notify.overviewUrl, CARRIER_SYNC_NOTIFY_OVERVIEW_URL) whatever the server listens on', () => {
  expect(overviewLinkOf('https://carrier-sync.example.com/ui', { host: '127.0.0.1', port: 8080 }, 'vm')).toBe('https://carrier-sync.example.com/ui');
});
