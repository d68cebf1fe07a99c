/**
 * The overview's Redis line (issue 35): the last failover's time is a `<time datetime>` the page's
 * script shows in the browser's local time, as every other time on the page; the rest is escaped.
 */
import { describe, expect, it } from 'vitest';
import { translator } from '../../src/i18n/translate.js';
import { topologyLine } from '../../src/ops/overview-page.js';

describe('the overview’s Redis line', () => {
  it('writes the last failover’s time for the local-time script, in each language', () => {
    const topology = {
      kind: 'sentinel' as const,
      primary: '10.0.0.6:6379',
      replicas: [{ address: '10.0.0.5:6379', state: 'online', lagSec: 0 }],
      lastFailover: { at: '2026-11-26T16:10:16.786Z', from: '10.0.0.5:6379', to: '<b>10.0.0.6:6379' },
    };
    const time = '<time datetime="2026-11-26T16:10:16.786Z" title="2026-11-26T16:10:16.786Z">2026-11-26T16:10:16.786Z</time>';
    expect(topologyLine(topology, translator('en'))).toBe(
      `sentinel, primary 10.0.0.6:6379; replicas 10.0.0.5:6379 (online, lag 0 s); last failover ${time} (from 10.0.0.5:6379 to &#60;b&#62;10.0.0.6:6379)`,
    );
    expect(topologyLine(topology, translator('pt-BR'))).toContain(`${time} (de 10.0.0.5:6379`);
    expect(topologyLine({ ...topology, lastFailover: null }, translator('en'))).toMatch(/; no failover seen$/);
  });
});
