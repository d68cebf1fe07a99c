/**
 * The spool says which deployment holds it: `<spool>/.holder.json`. The spool's lease lives in
 * Redis, under a deployment's prefix, so two deployments pointed at one spool by mistake (staging
 * and production on one share, each with its own Redis or prefix) would each hold "the" lease and
 * both move its files. The file is what they share: the lease holder writes it when it takes the
 * lease and on every renewal, and a process of another deployment that finds it live refuses to
 * watch the spool.
 *
 * Invariants:
 *  - Only a holder of the Redis lease writes the file, whole, to a temporary name then renamed into
 *    place: a reader sees the old record or the new one, never half of one.
 *  - A record is live until its `expiresAt` (the writer's clock + `holderFileMs`, several leases, so
 *    that clocks of hosts on one share may disagree by tens of seconds). A record of another
 *    deployment that expired (its holder died long ago) may be taken over.
 *  - Within one deployment the Redis lease decides, as before: the file only keeps deployments apart.
 *  - It holds no secret: the Redis address comes without credentials (store/deployment.ts).
 *
 * A holder reads the file again right before each write and does not overwrite another deployment's
 * live record.
 *
 * A write cut off by a `kill -9` between the temporary file and its rename leaves the temporary file
 * (`.holder.json.<pid>.<host>.<random>.tmp`; the interleavings sweep met one). Every write sweeps
 * them: one of this host whose process is gone at once, any other once it is STALE_TEMP_MS old (a
 * write takes milliseconds; another host's process cannot be asked, and a share's clock may differ). Two deployments taking over a free spool in the same instant may still both write
 * it; the one whose record was overwritten sees the other's at its next renewal (leaseMs/3 later)
 * and gives up.
 */
import { hash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { lstat, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DeploymentIdentity } from '../../store/deployment.js';
import { noteSpoolCallFailure, noteSpoolCallSuccess } from '../disk-state.js';
import { isProcessRunning } from '../../process-running.js';

export const HOLDER_FILE = '.holder.json';

/** `.holder.json.<pid>.<host: 8 hex>.<random>.tmp`, and the form before the pid and host (`.holder.json.<random>.tmp`). */
const HOLDER_TEMP = /^\.holder\.json\.(?:(\d+)\.([0-9a-f]{8})\.)?[0-9a-f]{8}\.tmp$/;
/** A holder's temporary file this old is a write cut off, whoever wrote it. */
const STALE_TEMP_MS = 10 * 60_000;

/** What `<spool>/.holder.json` holds. */
export interface HolderRecord extends DeploymentIdentity {
  host: string;
  pid: number;
  /** ISO times, the writer's clock. */
  renewedAt: string;
  expiresAt: string;
}

export interface HolderFile {
  readonly path: string;
  /** The live holder of another deployment named by the file, or null when this deployment may hold the spool. */
  foreignHolder(): Promise<HolderRecord | null>;
  /**
   * Writes the record naming this process, live for `holderFileMs` from now, unless the file names
   * a live holder of another deployment at that instant: then it writes nothing and returns that one.
   */
  mark(): Promise<HolderRecord | null>;
  /** Removes the file if it still names this process (a clean give-up). */
  unmark(): Promise<boolean>;
  /** The one line a process logs when another deployment holds the spool: both deployments named. */
  refusal(other: HolderRecord): string;
}

export interface HolderFileDeps {
  root: string;
  self: DeploymentIdentity;
  holderFileMs: number;
  now: () => number;
}

export function createHolderFile(deps: HolderFileDeps): HolderFile {
  const root = resolve(deps.root);
  const path = join(root, HOLDER_FILE);
  const me = { host: hostname(), pid: process.pid };
  const hostTag = hash('sha256', me.host, 'hex').slice(0, 8);
  const isMine = (record: HolderRecord): boolean => record.deploymentId === deps.self.deploymentId && record.host === me.host && record.pid === me.pid;
  return {
    path,
    async foreignHolder() {
      const record = await readHolderFile(root);
      if (record === null || record.deploymentId === deps.self.deploymentId) return null;
      return isLive(record, deps.now()) ? record : null;
    },
    async mark() {
      const at = deps.now();
      const record: HolderRecord = {
        ...deps.self,
        ...me,
        renewedAt: new Date(at).toISOString(),
        expiresAt: new Date(at + deps.holderFileMs).toISOString(),
      };
      const temp = join(root, `${HOLDER_FILE}.${me.pid}.${hostTag}.${randomBytes(4).toString('hex')}.tmp`);
      await sweepCutOffWrites(root, hostTag);
      try {
        await writeFile(temp, `${JSON.stringify(record)}\n`);
        noteSpoolCallSuccess('writeFile');
        // Checked last, right before the rename: another deployment that took the spool since the
        // caller's check is not overwritten (short of a write in the same instant, see the header).
        const current = await readHolderFile(root);
        if (current !== null && current.deploymentId !== deps.self.deploymentId && isLive(current, deps.now())) {
          await unlink(temp).catch(() => undefined);
          return current;
        }
        await rename(temp, path);
        return null;
      } catch (error) {
        await unlink(temp).catch(() => undefined);
        // A full disk is the spool's state (said once, in /readyz and a metric), not this file's.
        noteSpoolCallFailure('writeFile', error, temp);
        throw error;
      }
    },
    async unmark() {
      const record = await readHolderFile(root).catch(() => null);
      if (record === null || !isMine(record)) return false;
      await unlink(path).catch(() => undefined);
      return true;
    },
    refusal(other) {
      return (
        `refusing to watch the spool ${root}: another deployment holds it (${describeDeployment(other)}; pid ${other.pid} on ${other.host}, live until ${other.expiresAt}), ` +
        `this process belongs to ${describeDeployment(deps.self)}. Point each deployment at its own spool; this process checks again every second`
      );
    },
  };
}

/** Removes the holder's temporary files of writes cut off (the header says which); never throws. */
async function sweepCutOffWrites(root: string, hostTag: string): Promise<void> {
  const names = await readdir(root).catch(() => [] as string[]);
  for (const name of names) {
    const match = HOLDER_TEMP.exec(name);
    if (match === null) continue;
    const [, pid, host] = match;
    const isThisHosts = pid !== undefined && host === hostTag;
    const path = join(root, name);
    // A temporary of this process (a write under way) is of a process running: kept.
    const isCutOff = isThisHosts ? !isProcessRunning(Number(pid)) : Date.now() - ((await lstat(path).catch(() => null))?.mtimeMs ?? Date.now()) > STALE_TEMP_MS;
    if (isCutOff) await unlink(path).catch(() => undefined);
  }
}

/** `prefix "<prefix>" on <redis address>`: how a deployment is named to people. */
export function describeDeployment(identity: Pick<DeploymentIdentity, 'prefix' | 'redis'>): string {
  return `prefix "${identity.prefix}" on ${identity.redis}`;
}

export function isLive(record: HolderRecord, nowMs: number): boolean {
  const expiresAt = Date.parse(record.expiresAt);
  return Number.isFinite(expiresAt) && expiresAt > nowMs;
}

/** The record in `<root>/.holder.json`; null when there is none or it is not a record (then it is overwritten). */
export async function readHolderFile(root: string): Promise<HolderRecord | null> {
  let text: string;
  try {
    text = await readFile(join(resolve(root), HOLDER_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<Record<keyof HolderRecord, unknown>>;
    const { deploymentId, prefix, redis, host, pid, renewedAt, expiresAt } = value;
    if (typeof deploymentId !== 'string' || typeof expiresAt !== 'string') return null;
    return {
      deploymentId,
      prefix: String(prefix ?? '?'),
      redis: String(redis ?? '?'),
      host: String(host ?? '?'),
      pid: Number(pid ?? 0),
      renewedAt: String(renewedAt ?? ''),
      expiresAt,
    };
  } catch {
    return null;
  }
}
