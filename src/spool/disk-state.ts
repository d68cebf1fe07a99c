/**
 * Is the spool's disk full? One state per process (a process watches one spool), fed by the
 * spool's file calls (file-calls.ts):
 *
 *   ok ──(a write, rename or mkdir fails with ENOSPC or EDQUOT)──▶ full     one warn line
 *   full ──(a write succeeds, or a call of the kind that failed)──▶ ok      one info line, with how long
 *
 * A rename or an existing folder needs no room on some file systems (tmpfs), so only a write, or a
 * success of the very call that failed, proves there is room again. While full, a probe writes a
 * small hidden temp file in the spool root every PROBE_EVERY_MS (and removes it): what is waiting
 * on the disk (a claim's backoff, an outcome move's hour-long retry) learns within seconds that
 * space was freed, and the state does not stay full for want of a write.
 *
 * While full, `/readyz` is 503 "spool disk full", the overview's state line says so and
 * `carrier_sync_spool_disk_full{spool}` is 1; the claims of the files that hit it back off
 * (watcher.ts) instead of retrying every `writeStableMs`, each failure logged at debug only. A
 * full disk loses nothing: a file whose report or move could not be written stays where it was
 * and is taken up again once space frees.
 */
import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.js';

const FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** Backoff of a claim that hit a full disk: doubling from the first to the last. */
export const FULL_RETRY_FIRST_MS = 250;
export const FULL_RETRY_MAX_MS = 30_000;
const PROBE_EVERY_MS = 2000;

export type SpoolCall = 'writeFile' | 'rename' | 'mkdir';

export interface SpoolDiskView {
  /** The spool this process watches; null before the watcher role started. */
  spoolId: string | null;
  isFull: boolean;
  /** When writes started failing (ms since the epoch); null when not full. */
  fullSince: number | null;
  /** The error code of the first failure (ENOSPC or EDQUOT); null when not full. */
  code: string | null;
}

interface State extends SpoolDiskView {
  root: string | null;
  logger: Logger | null;
  /** Times the disk came back: a claim backing off can look at it and go again at once. */
  recoveries: number;
  /** The call that found the disk full. */
  failedCall: SpoolCall | null;
  probe: NodeJS.Timeout | null;
}

const state: State = { spoolId: null, root: null, logger: null, isFull: false, fullSince: null, code: null, recoveries: 0, failedCall: null, probe: null };

/** Whether `error` says the disk (or the user's quota on it) is full. */
export function isDiskFullError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && FULL_CODES.has(String((error as NodeJS.ErrnoException).code));
}

/** Names the spool and the logger of the process's spool (the watcher role, once it knows its spool). */
export function attachSpoolDisk(spool: { spoolId: string; root: string }, logger: Logger): void {
  Object.assign(state, { spoolId: spool.spoolId, root: spool.root, logger });
}

export function spoolDisk(): SpoolDiskView {
  return { spoolId: state.spoolId, isFull: state.isFull, fullSince: state.fullSince, code: state.code };
}

/** How many times the disk came back since the process started. */
export function spoolDiskRecoveries(): number {
  return state.recoveries;
}

/** A spool file call failed: when the disk is full, the state turns full (logged once). */
export function noteSpoolCallFailure(call: SpoolCall, error: unknown, path: string): void {
  if (!isDiskFullError(error) || state.isFull) return;
  const code = String((error as NodeJS.ErrnoException).code);
  Object.assign(state, { isFull: true, fullSince: Date.now(), code, failedCall: call });
  state.logger?.warn(
    { spoolId: state.spoolId, spool: state.root, path, code, err: error },
    'spool disk full: files wait where they are (inbox or in flight) and are taken up again once writes succeed',
  );
  startProbe();
}

/** A spool file call succeeded: a write (or the kind of call that failed) says a full disk has room again. */
export function noteSpoolCallSuccess(call: SpoolCall): void {
  if (!state.isFull || (call !== 'writeFile' && call !== state.failedCall)) return;
  const fullForMs = Date.now() - (state.fullSince ?? Date.now());
  if (state.probe !== null) clearInterval(state.probe);
  Object.assign(state, { isFull: false, fullSince: null, code: null, failedCall: null, probe: null });
  state.recoveries += 1;
  state.logger?.info({ spoolId: state.spoolId, spool: state.root, fullForMs }, 'spool disk: writes succeed again');
}

function startProbe(): void {
  const root = state.root;
  if (root === null || state.probe !== null) return;
  // Hidden and ending in .tmp: no watcher takes it for a file.
  const path = join(root, `.spool-disk-probe.${process.pid}.tmp`);
  let isProbing = false;
  state.probe = setInterval(() => {
    if (isProbing) return;
    isProbing = true;
    void hasRoom(path).then((isWritten) => {
      isProbing = false;
      if (isWritten) noteSpoolCallSuccess('writeFile');
    });
  }, PROBE_EVERY_MS);
  state.probe.unref();
}

/** Writes a few bytes to `path`; removes the file whether the write worked or not. */
async function hasRoom(path: string): Promise<boolean> {
  try {
    await writeFile(path, 'probe\n');
    return true;
  } catch {
    return false;
  } finally {
    await unlink(path).catch(() => undefined);
  }
}
