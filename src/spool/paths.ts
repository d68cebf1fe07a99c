/**
 * Every path of the spool. A file's lifecycle, each step a rename on one filesystem:
 *
 *   <kind>/<name>                              inbox: dropped by the warehouse
 *   .inflight/<kind>/<claimId>~<name>          claimed: validated and queued (or being queued)
 *   archive/<kind>/<YYYY-MM-DD>/<name>         the API accepted it            } exactly one of
 *   failed/<kind>/<name> + <name>.error.json   refused locally or dead-lettered } these, once
 *
 * The claim id is `<content id>-<token>`: the content id (a hash prefix) ties the file to its job;
 * the token — the claim's time in microseconds (14 hex digits, strictly increasing within a
 * process) and 4 random hex digits — makes two drops of one name distinct and orders claims
 * (document generations, see gate/push-gate.ts). Claims of older versions have an 8-hex token. Nothing is ever deleted; a name already taken
 * in archive/ or failed/ gets a `~2`, `~3`… suffix before its extension.
 */
import { createHash, randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import { basename, extname, join, resolve } from 'node:path';
import type { SpoolKind } from '../store/keys.js';

export interface SpoolPaths {
  root: string;
  /** Names this spool in outcome messages and its lease (see spool-id.ts). */
  spoolId: string;
  inbox(kind: SpoolKind): string;
  inflight(kind: SpoolKind): string;
  archive(kind: SpoolKind, at: Date): string;
  failed(kind: SpoolKind): string;
}

/** `id`: the spool's id (spool-id.ts); by default the one a spool without an id file gets. */
export function spoolPaths(root: string, id: string | null = null): SpoolPaths {
  const absolute = resolve(root);
  return {
    root: absolute,
    spoolId: id ?? defaultSpoolId(absolute),
    inbox: (kind) => join(absolute, kind),
    inflight: (kind) => join(absolute, '.inflight', kind),
    archive: (kind, at) => join(absolute, 'archive', kind, at.toISOString().slice(0, 10)),
    failed: (kind) => join(absolute, 'failed', kind),
  };
}

/** A hash of host name and absolute folder: the id of a spool before ids were kept in the spool. */
export function defaultSpoolId(root: string): string {
  return createHash('sha256').update(`${hostname()}:${resolve(root)}`).digest('hex').slice(0, 12);
}

export interface ClaimName {
  claimId: string;
  contentId: string;
  fileName: string;
  /** When the file was claimed (µs since the epoch); 0 for a claim made by an older version. */
  claimStampUs: number;
}

let lastStampUs = 0;

/** A new claim id for `bytes` (`sha256Hex`: their sha256 when the caller has it already). */
export function newClaimId(bytes: Uint8Array, sha256Hex?: string): string {
  lastStampUs = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastStampUs + 1);
  return `${sha256Hex === undefined ? contentIdOf(bytes) : sha256Hex.slice(0, 16)}-${lastStampUs.toString(16).padStart(14, '0')}${randomInt(0x10000).toString(16).padStart(4, '0')}`;
}

/** The claim time a claim id carries (µs since the epoch; 0 for an old-format id). */
export function claimStampOf(claimId: string): number {
  const token = claimId.slice(17);
  return token.length === 18 ? parseInt(token.slice(0, 14), 16) : 0;
}

export function inflightName(claimId: string, fileName: string): string {
  return `${claimId}~${fileName}`;
}

/** Reads `<contentId>-<token>~<name>`; null for anything else. */
export function parseInflightName(name: string): ClaimName | null {
  const match = /^([0-9a-f]{16})-([0-9a-f]{8}|[0-9a-f]{18})~(.+)$/.exec(name);
  if (match === null) return null;
  const claimId = `${match[1]}-${match[2]}`;
  return { claimId, contentId: match[1]!, fileName: match[3]!, claimStampUs: claimStampOf(claimId) };
}

/** `name`, then `name~2.ext`, `name~3.ext`…: the n-th candidate for a free target name. */
export function candidateName(fileName: string, n: number): string {
  if (n <= 1) return fileName;
  const ext = extname(fileName);
  return `${basename(fileName, ext)}~${n}${ext}`;
}

/** The inverse of `candidateName`: `name~3.ext` → `name.ext`. (A `~` is never in a spool name.) */
export function originalName(candidate: string): string {
  const ext = extname(candidate);
  const base = basename(candidate, ext);
  const at = base.search(/~\d+$/);
  return at < 0 ? candidate : `${base.slice(0, at)}${ext}`;
}

export function contentIdOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}
