/**
 * Who owns a spool: what the spool lease promises, and its interfaces (lease-holder.ts keeps the
 * promises). Of every process with the watcher role on one spool (on one host or several
 * mounting one share), the one holding the spool's lease in Redis watches the inboxes, claims and
 * moves files and reconciles `.inflight/`; the others stand by and try to take the lease.
 *
 * Timing, for a lease of L ms (`spool.leaseMs`, 5 s by default):
 *  - the holder renews every L/3; a standby tries every min(1 s, L/3). After the holder stops, it
 *    gives the lease up and a standby holds it within about a second; after a `kill -9`, the lease
 *    expires at most L after the last renewal and a standby holds it within about L + 1 s.
 *  - Fencing: the holder counts its lease valid until 3/4·L after it *sent* the last renewal that
 *    Redis confirmed. Redis keeps the key at least L after that send, so the holder has stopped
 *    moving files (every move checks the fence first) at least L/4 before another process can take
 *    the lease, whatever happened to Redis or the network in between. A move already under way at
 *    that instant has those L/4 to finish.
 *
 * Deployments (optional `spoolFile`, see spool/holder-file.ts): the Redis lease only orders the
 * processes of one deployment (one Redis and prefix). The spool itself names the deployment that
 * holds it; before each attempt to take the lease and each renewal, a process reads that: while a
 * live holder of another deployment is named, it neither takes nor keeps the lease (one error line
 * naming both deployments when that holder appears). The holder writes the file after taking the
 * lease (before starting any work: if it cannot, it gives the lease back) and after each renewal.
 */
import type { Logger } from '../../log.js';
import type { Lease } from '../../store/lease.js';
import type { HolderFile, HolderRecord } from './holder-file.js';

/** Whether this process may still move the spool's files: checked before every move. */
export interface Fence {
  isHeld(): boolean;
  /** Throws when the lease is not (or no longer) held. */
  assertHeld(): void;
}

/** The holder's work, started on each acquisition. `stop` may be called more than once. */
export interface HeldSession {
  stop(options: { isShutdown: boolean }): Promise<void>;
}

export interface SpoolLeaseDeps<S extends HeldSession> {
  lease: Lease;
  leaseMs: number;
  logger: Logger;
  /** Starts the holder's work with a fence of its own (dead once this holding ends). */
  start(fence: Fence): Promise<S>;
  /** The spool's own record of its holder, which keeps other deployments off it. */
  spoolFile?: HolderFile;
}

export interface SpoolLeaseState {
  /** This process's part: holder, standby, or stopped (shutting down). */
  role: 'holder' | 'standby' | 'stopped';
  self: { host: string; pid: number };
  /** The holder as Redis has it, null when nobody holds the lease. */
  holder: { host: string; pid: number; since: string; ttlMs: number; isSelf: boolean } | null;
  /** The live holder of another deployment named by the spool, which keeps this process off it; null when none. */
  foreignHolder: HolderRecord | null;
}

export interface SpoolLease<S extends HeldSession> {
  isHolder(): boolean;
  /** The holder's work while this process holds the lease. */
  session(): S | null;
  state(): Promise<SpoolLeaseState>;
  /** No more attempts to take the lease (the first step of a shutdown); a holder keeps it. */
  stopAcquiring(): void;
  /** Stops the holder's work (letting it drain), then gives the lease up. */
  close(): Promise<void>;
}

/** The line a standby logs when it starts standing by, and again when the holder changes. */
export const STANDING_BY = 'standing by: another process holds the spool lease (it watches the spool and moves its files)';
