/**
 * The lease holder's side of the spool's holder file (holder-file.ts): whether another deployment
 * holds the spool, and writing this process's record there. Each change is said once: another
 * deployment's live holder appearing (an error line naming both deployments) or leaving, the file
 * failing to be read or written, and working again.
 *
 * The spool's file calls get leaseMs/3 at most: a share slower than that only keeps things as they
 * are (a holder keeps holding, a standby does not take the lease) and delays a renewal by as much.
 */
import type { Logger } from '../../log.js';
import { isDiskFullError } from '../disk-state.js';
import { withDeadline } from '../deadline.js';
import type { HolderFile, HolderRecord } from './holder-file.js';

export interface HolderFileGuardDeps {
  /** None: only one deployment uses the spool, nothing to check or write. */
  spoolFile: HolderFile | undefined;
  /** How long one file call may take (leaseMs/3). */
  callMs: number;
  logger: Logger;
  /** Fields every line carries (the lease's key). */
  about: Record<string, unknown>;
}

export interface HolderFileGuard {
  /** Another deployment's live holder last seen in the spool; null when none. */
  foreign(): HolderRecord | null;
  /** The live holder of another deployment, or null; throws when the spool cannot be read. */
  foreignHolder(): Promise<HolderRecord | null>;
  /** Whether a standby may try to take the lease: the spool was read and names no other deployment. */
  allowsTaking(): Promise<boolean>;
  /**
   * Writes the spool's holder record: 'written'; 'foreign' when another deployment's live holder is
   * named there instead (logged as by a check); 'failed' (one warning per failing stretch).
   */
  mark(): Promise<'written' | 'foreign' | 'failed'>;
}

export function guardHolderFile(deps: HolderFileGuardDeps): HolderFileGuard {
  const { spoolFile, callMs, logger, about } = deps;
  const noAnswer = `no answer from the spool within ${callMs} ms`;
  /** Another deployment's live holder last seen in the spool (one log line per holder). */
  let foreign: HolderRecord | null = null;
  let isWriteFailing = false;
  let isReadFailing = false;

  /** Remembers another deployment's live holder (or none): one line each time that changes. */
  function noteForeign(file: HolderFile, other: HolderRecord | null): void {
    if (other === null) {
      if (foreign !== null) logger.info({ ...about, spoolFile: file.path }, 'the spool is no longer held by another deployment');
    } else if (foreign?.deploymentId !== other.deploymentId || foreign.host !== other.host || foreign.pid !== other.pid) {
      logger.error({ ...about, spoolFile: file.path, theirs: other }, file.refusal(other));
    }
    foreign = other;
  }

  async function foreignHolder(): Promise<HolderRecord | null> {
    if (spoolFile === undefined) return null;
    const other = await withDeadline(spoolFile.foreignHolder(), callMs, noAnswer);
    noteForeign(spoolFile, other);
    return other;
  }

  async function allowsTaking(): Promise<boolean> {
    try {
      if ((await foreignHolder()) !== null) return false;
      isReadFailing = false;
      return true;
    } catch (error) {
      if (!isReadFailing) logger.warn({ ...about, err: error }, 'reading the spool holder file failed; not taking the spool lease until it can be read');
      isReadFailing = true;
      return false;
    }
  }

  async function mark(): Promise<'written' | 'foreign' | 'failed'> {
    if (spoolFile === undefined) return 'written';
    try {
      const other = await withDeadline(spoolFile.mark(), callMs, noAnswer);
      if (isWriteFailing) logger.info({ ...about, spoolFile: spoolFile.path }, 'the spool holder file is written again');
      isWriteFailing = false;
      if (other !== null) noteForeign(spoolFile, other);
      return other === null ? 'written' : 'foreign';
    } catch (error) {
      // A full disk was said once by the spool's disk state (disk-state.ts): not again here.
      const level = isDiskFullError(error) ? 'debug' : 'warn';
      if (!isWriteFailing) logger[level]({ ...about, spoolFile: spoolFile.path, err: error }, 'writing the spool holder file failed; retrying');
      isWriteFailing = true;
      return 'failed';
    }
  }

  return { foreign: () => foreign, foreignHolder, allowsTaking, mark };
}
