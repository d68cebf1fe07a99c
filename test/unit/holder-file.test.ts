/**
 * The spool's holder file and the deployment identity it carries: what a record holds (never a
 * secret), when it counts as live, and that a holder does not overwrite another deployment's live
 * record.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { redisAddressOf } from '../../src/store/deployment.js';
import { createHolderFile, HOLDER_FILE, isLive, readHolderFile } from '../../src/spool/lease/holder-file.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempSpool(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-holder-unit-'));
  dirs.push(dir);
  return dir;
}

describe('redisAddressOf', () => {
  it.each([
    ['redis://:s3cret@10.0.0.5:6380/2', 'redis://10.0.0.5:6380/2'],
    ['rediss://app:s3cret@cache.internal?password=s3cret&family=4', 'rediss://cache.internal:6379'],
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['redis://u:s3cret@a:7000,redis://u:s3cret@b:7001', 'redis://a:7000,redis://b:7001'],
  ])('%s is shown as %s', (url, shown) => {
    expect(redisAddressOf(url)).toBe(shown);
    expect(redisAddressOf(url)).not.toContain('s3cret');
  });
});

describe('the holder file', () => {
  const self = { deploymentId: 'dep-a', prefix: 'carrier-sync', redis: redisAddressOf('redis://:s3cret@10.0.0.5:6379') };
  let nowMs = Date.parse('2026-11-25T08:00:00.000Z');
  const now = (): number => nowMs;

  it('names the deployment, host and pid, live for holderFileMs, with no secret in it', async () => {
    const spool = await tempSpool();
    expect(await createHolderFile({ root: spool, self, holderFileMs: 60_000, now }).mark()).toBeNull();
    const text = await readFile(join(spool, HOLDER_FILE), 'utf8');
    expect(text).not.toContain('s3cret');
    const record = await readHolderFile(spool);
    expect(record).toMatchObject({ ...self, pid: process.pid, renewedAt: '2026-11-25T08:00:00.000Z', expiresAt: '2026-11-25T08:01:00.000Z' });
    expect(isLive(record!, nowMs + 59_999)).toBe(true);
    expect(isLive(record!, nowMs + 60_000)).toBe(false);
    expect(await readdir(spool)).toEqual([HOLDER_FILE]);
  });

  it('a write sweeps what writes cut off by a kill -9 left: this host’s of a process gone at once, any other once 10 minutes old', async () => {
    const spool = await tempSpool();
    const host = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
    const gone = spawnSync(process.execPath, ['-e', '0']).pid;
    const temps = {
      ownHostGone: `${HOLDER_FILE}.${gone}.${host}.aaaaaaaa.tmp`,
      ownHostRunning: `${HOLDER_FILE}.${process.ppid}.${host}.bbbbbbbb.tmp`,
      otherHostFresh: `${HOLDER_FILE}.${gone}.0badc0de.cccccccc.tmp`,
      otherHostOld: `${HOLDER_FILE}.${gone}.0badc0de.dddddddd.tmp`,
      earlierFormFresh: `${HOLDER_FILE}.eeeeeeee.tmp`,
      earlierFormOld: `${HOLDER_FILE}.ffffffff.tmp`,
    };
    for (const name of Object.values(temps)) await writeFile(join(spool, name), '{"deploymentId":"half a rec');
    const elevenMinutesAgo = (Date.now() - 11 * 60_000) / 1000;
    for (const name of [temps.otherHostOld, temps.earlierFormOld]) await utimes(join(spool, name), elevenMinutesAgo, elevenMinutesAgo);
    expect(await createHolderFile({ root: spool, self, holderFileMs: 60_000, now }).mark()).toBeNull();
    expect((await readdir(spool)).sort()).toEqual([HOLDER_FILE, temps.ownHostRunning, temps.otherHostFresh, temps.earlierFormFresh].sort());
    expect(await readHolderFile(spool)).toMatchObject({ ...self, pid: process.pid });
  });

  it('another deployment sees a live record as foreign until it expires; the same deployment never does', async () => {
    const spool = await tempSpool();
    await createHolderFile({ root: spool, self, holderFileMs: 60_000, now }).mark();
    const other = createHolderFile({ root: spool, self: { ...self, deploymentId: 'dep-b' }, holderFileMs: 60_000, now });
    const same = createHolderFile({ root: spool, self, holderFileMs: 60_000, now });
    expect(await other.foreignHolder()).toMatchObject({ deploymentId: 'dep-a' });
    expect(await same.foreignHolder()).toBeNull();
    // A live record of another deployment is not overwritten; the write says whose it is.
    expect(await other.mark()).toMatchObject({ deploymentId: 'dep-a' });
    expect(await readHolderFile(spool)).toMatchObject({ deploymentId: 'dep-a' });
    expect(await readdir(spool)).toEqual([HOLDER_FILE]);
    nowMs += 60_000;
    expect(await other.foreignHolder()).toBeNull();
    expect(await other.mark()).toBeNull();
    expect(await readHolderFile(spool)).toMatchObject({ deploymentId: 'dep-b' });
    // Its clean give-up removes only its own record.
    expect(await same.unmark()).toBe(false);
    expect(await other.unmark()).toBe(true);
    expect(await readHolderFile(spool)).toBeNull();
  });

  it('the refusal names both deployments', () => {
    const other = createHolderFile({ root: '/spool', self: { deploymentId: 'dep-b', prefix: 'staging', redis: 'redis://r2:6379' }, holderFileMs: 60_000, now });
    const line = other.refusal({ ...self, host: 'prod-1', pid: 42, renewedAt: '', expiresAt: '2026-11-25T08:01:00.000Z' });
    expect(line).toContain(
      'another deployment holds it (prefix "carrier-sync" on redis://10.0.0.5:6379; pid 42 on prod-1, live until 2026-11-25T08:01:00.000Z)',
    );
    expect(line).toContain('this process belongs to prefix "staging" on redis://r2:6379');
  });
});
