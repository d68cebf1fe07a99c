/**
 * One spool, one deployment: the keeper with the spool's holder file (spool/lease/holder-file.ts) on a
 * real Redis, two deployments told apart by their prefixes (the e2e test uses two Redis servers).
 * The holder file's clock is injected, so its expiry is driven by the test, not waited for.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createKeys } from '../../src/store/keys.js';
import { createLease } from '../../src/store/lease.js';
import { resolveDeploymentId } from '../../src/store/deployment.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { holdSpoolLease } from '../../src/spool/lease/lease-holder.js';
import type { Fence, HeldSession, SpoolLease } from '../../src/spool/lease/spool-lease.js';
import { createHolderFile, HOLDER_FILE, readHolderFile, type HolderFile } from '../../src/spool/lease/holder-file.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const LEASE_MS = 1500;
const HOLDER_FILE_MS = 10_000;
const prefixes = [uniquePrefix('holder-a'), uniquePrefix('holder-b')] as const;
const redis = connectRedis(testRedisUrl(), 'holder-file-test');
const opened: Array<() => Promise<void>> = [];
/** The holder files' clock (wall time plus what the test moves it on). */
let skewMs = 0;
const now = (): number => Date.now() + skewMs;

afterEach(async () => {
  while (opened.length > 0) await opened.pop()!();
  skewMs = 0;
});
afterAll(async () => {
  await closeRedis(redis);
  for (const prefix of prefixes) await cleanupPrefix(prefix);
});

interface Keeper {
  held: SpoolLease<HeldSession & { stops: number }>;
  sessions: Array<{ fence: Fence; stops: number }>;
  logs: Array<{ level: number; msg: string; [field: string]: unknown }>;
  /** How many times the keeper read the spool's holder file. */
  checks(): number;
}

async function startKeeper(spool: string, prefix: string): Promise<Keeper> {
  const keys = createKeys(prefix);
  const logs: Keeper['logs'] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Keeper['logs'][number]);
      done();
    },
  });
  const self = { deploymentId: await resolveDeploymentId(redis, keys), prefix, redis: 'redis://127.0.0.1:6379' };
  const file = createHolderFile({ root: spool, self, holderFileMs: HOLDER_FILE_MS, now });
  let checks = 0;
  const counted: HolderFile = {
    ...file,
    foreignHolder: () => {
      checks += 1;
      return file.foreignHolder();
    },
  };
  const sessions: Keeper['sessions'] = [];
  const held = await holdSpoolLease({
    lease: createLease(redis, keys.spoolLease('shared-spool')),
    leaseMs: LEASE_MS,
    logger: createLogger({ level: 'info', destination }),
    spoolFile: counted,
    async start(fence) {
      const session = {
        fence,
        stops: 0,
        async stop() {
          session.stops += 1;
        },
      };
      sessions.push(session);
      return session;
    },
  });
  opened.push(() => held.close());
  return { held, sessions, logs, checks: () => checks };
}

async function tempSpool(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-holder-'));
  opened.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const refusals = (keeper: Keeper): Keeper['logs'] => keeper.logs.filter((line) => line.msg.startsWith('refusing to watch the spool'));

describe('the spool holder file', () => {
  it('a keeper of another deployment refuses a live holder’s spool with one line naming both; one of the same deployment stands by as before', async () => {
    const spool = await tempSpool();
    const a = await startKeeper(spool, prefixes[0]);
    expect(a.held.isHolder()).toBe(true);
    const record = await readHolderFile(spool);
    expect(record).toMatchObject({ prefix: prefixes[0], pid: process.pid, redis: 'redis://127.0.0.1:6379' });
    expect(Date.parse(record!.expiresAt) - Date.parse(record!.renewedAt)).toBe(HOLDER_FILE_MS);

    const b = await startKeeper(spool, prefixes[1]);
    const sameDeployment = await startKeeper(spool, prefixes[0]);
    const checksBefore = b.checks();
    await waitFor(() => b.checks() >= checksBefore + 3, { what: 'three more checks of the holder file', timeoutMs: 10_000 });
    expect(b.held.isHolder()).toBe(false);
    expect(b.sessions).toEqual([]);
    const lines = refusals(b);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe(50);
    expect(lines[0]!.msg).toContain(`another deployment holds it (prefix "${prefixes[0]}" on redis://127.0.0.1:6379;`);
    expect(lines[0]!.msg).toContain(`this process belongs to prefix "${prefixes[1]}" on redis://127.0.0.1:6379`);
    expect((await b.held.state()).foreignHolder).toMatchObject({ prefix: prefixes[0], deploymentId: record!.deploymentId });

    expect(sameDeployment.held.isHolder()).toBe(false);
    expect(refusals(sameDeployment)).toEqual([]);
    expect(sameDeployment.logs.map((line) => line.msg)).toContain(
      'standing by: another process holds the spool lease (it watches the spool and moves its files)',
    );
    expect((await sameDeployment.held.state()).foreignHolder).toBeNull();
    // The holder renews its record with the lease.
    await waitFor(async () => (await readHolderFile(spool))!.renewedAt > record!.renewedAt, { what: 'the record renewed', timeoutMs: 5000 });
  });

  it('a clean stop of the holder removes its record: a keeper of another deployment then takes the spool', async () => {
    const spool = await tempSpool();
    const a = await startKeeper(spool, prefixes[0]);
    const b = await startKeeper(spool, prefixes[1]);
    expect(b.held.isHolder()).toBe(false);
    await a.held.close();
    await waitFor(() => b.held.isHolder(), { what: 'the other deployment holding the spool', timeoutMs: 5000 });
    expect(await readHolderFile(spool)).toMatchObject({ prefix: prefixes[1] });
    expect(b.logs.map((line) => line.msg)).toContain('the spool is no longer held by another deployment');
    expect((await b.held.state()).foreignHolder).toBeNull();
  });

  it('the record of a holder that died keeps the spool until it expires; then another deployment takes it over', async () => {
    const spool = await tempSpool();
    // What a holder of deployment A killed with -9 leaves: its record, never removed.
    const dead = createHolderFile({
      root: spool,
      self: { deploymentId: 'dead-deployment', prefix: 'a', redis: 'redis://a:6379' },
      holderFileMs: HOLDER_FILE_MS,
      now,
    });
    await dead.mark();
    const b = await startKeeper(spool, prefixes[1]);
    const checksBefore = b.checks();
    await waitFor(() => b.checks() >= checksBefore + 2, { what: 'two more checks of the holder file', timeoutMs: 10_000 });
    expect(b.held.isHolder()).toBe(false);
    expect(refusals(b)).toHaveLength(1);
    skewMs = HOLDER_FILE_MS + 1;
    await waitFor(() => b.held.isHolder(), { what: 'the expired record taken over', timeoutMs: 5000 });
    expect(await readHolderFile(spool)).toMatchObject({ prefix: prefixes[1] });
  });

  it('a holder that finds a live record of another deployment in the spool stops its work and gives the lease up', async () => {
    const spool = await tempSpool();
    const a = await startKeeper(spool, prefixes[0]);
    expect(a.held.isHolder()).toBe(true);
    // Another deployment's holder took the spool while this one's record looked expired to it (a stalled share, skewed clocks).
    // Its own record is live to this process, so the test writes the other's in place.
    const at = now();
    const theirs = {
      deploymentId: 'other',
      prefix: 'b',
      redis: 'redis://b:6379',
      host: 'elsewhere',
      pid: 7,
      renewedAt: new Date(at).toISOString(),
      expiresAt: new Date(at + HOLDER_FILE_MS).toISOString(),
    };
    await writeFile(join(spool, HOLDER_FILE), JSON.stringify(theirs));
    await waitFor(() => !a.held.isHolder(), { what: 'the holder giving up', timeoutMs: 5000 });
    expect(a.sessions[0]!.fence.isHeld()).toBe(false);
    expect(a.sessions[0]!.stops).toBe(1);
    expect(a.logs.find((line) => line.msg === 'lost the spool lease: stopped moving files; standing by')?.['reason']).toBe(
      'another deployment holds the spool',
    );
    expect(await redis.get(createKeys(prefixes[0]).spoolLease('shared-spool'))).toBeNull();
    // Its clean stop leaves the other deployment's record alone.
    await a.held.close();
    expect(await readHolderFile(spool)).toEqual(theirs);
    expect(refusals(a)).toHaveLength(1);
  });

  it('a file that holds no record is taken over; a temporary name of a write is never left behind', async () => {
    const spool = await tempSpool();
    await writeFile(join(spool, HOLDER_FILE), 'not json');
    const a = await startKeeper(spool, prefixes[0]);
    expect(a.held.isHolder()).toBe(true);
    const record = JSON.parse(await readFile(join(spool, HOLDER_FILE), 'utf8')) as { prefix: string; renewedAt: string };
    expect(record).toMatchObject({ prefix: prefixes[0] });
    await waitFor(async () => (await readHolderFile(spool))!.renewedAt !== record.renewedAt, { what: 'a renewal', timeoutMs: 5000 });
    expect(await readdir(spool)).toEqual([HOLDER_FILE]);
  });
});
