/**
 * Moves out of the inbox this process may not make (a permission, a read-only file system), as the
 * claim pass (claim-pass.ts) saw them: what it says once a kind, the overview's state and the
 * metrics. A module of its own, with no runtime imports, so the ops server and the metrics can read
 * it without loading the claim.
 */
import type { SpoolKind } from '../store/keys.js';

/** Moves out of the inbox this process may not make, for the overview: the first refusal's code and folder, since when. */
export interface ClaimsRefused {
  code: string;
  folder: string | null;
  /** ms since the epoch. */
  since: number;
  kinds: SpoolKind[];
}

/** Set while a kind's moves out of the inbox are refused (a permission, a read-only file system); null once every kind's move works. */
let claimsRefusedNow: ClaimsRefused | null = null;

/** Not this process's to say once it stops watching the spool (its watcher closed): the next holder says its own. */
export function forgetClaimsRefused(): void {
  claimsRefusedNow = null;
}

/** What the overview shows while files wait in the inbox because they may not be moved out of it (the watcher's process). */
export function claimsRefused(): ClaimsRefused | null {
  return claimsRefusedNow === null ? null : { ...claimsRefusedNow, kinds: [...claimsRefusedNow.kinds] };
}

/** A refusal of a kind's move out of the inbox; true when the kind was not refused before (the claim pass says it then, once). */
export function noteClaimsRefused(kind: SpoolKind, code: string, folder: string | null, now: number): boolean {
  claimsRefusedNow ??= { code, folder, since: now, kinds: [] };
  if (claimsRefusedNow.kinds.includes(kind)) return false;
  claimsRefusedNow.kinds.push(kind);
  return true;
}

/** A kind's move out of the inbox works; true when it was refused until now. The state ends once no kind is refused. */
export function noteClaimsMoveAgain(kind: SpoolKind): boolean {
  if (claimsRefusedNow?.kinds.includes(kind) !== true) return false;
  claimsRefusedNow.kinds = claimsRefusedNow.kinds.filter((refused) => refused !== kind);
  if (claimsRefusedNow.kinds.length === 0) claimsRefusedNow = null;
  return true;
}
