/**
 * The in-flight files of this spool, by content id, kept in memory by the process that owns the
 * spool. Built from `.inflight/` at start; claims add to it, outcomes take from it. It saves a
 * directory listing per outcome, which would cost O(n²) with thousands of files in flight.
 */
import { readdir } from 'node:fs/promises';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import { parseInflightName, type SpoolPaths } from './paths.js';

export interface InflightIndex {
  track(kind: SpoolKind, name: string): void;
  find(kind: SpoolKind, contentId: string): string[];
  forget(kind: SpoolKind, name: string): void;
  all(kind: SpoolKind): string[];
  /** Names tracked before `before` (epoch ms): settled claims, safe for a periodic reconcile. */
  olderThan(kind: SpoolKind, before: number): string[];
  /** When `name` was tracked (epoch ms; 0 for what was in flight at start), or null when it is not. */
  trackedAt(kind: SpoolKind, name: string): number | null;
  /**
   * Lists `.inflight/` again and tracks, from now, what is there and was not tracked: a file moved
   * in by a process that lost the spool's lease after this one read the folder, or by a person.
   * The periodic reconcile then takes it up like any claim of its age. Returns how many were new.
   */
  adoptUntracked(): Promise<number>;
}

export async function loadInflightIndex(paths: SpoolPaths): Promise<InflightIndex> {
  const byKind: Record<SpoolKind, Map<string, Set<string>>> = { labels: new Map(), cte: new Map(), events: new Map() };
  const trackedAt = new Map<string, number>();
  const at = (kind: SpoolKind, name: string): string => `${kind}/${name}`;
  const index: InflightIndex = {
    track(kind, name) {
      const parsed = parseInflightName(name);
      if (parsed === null) return;
      let names = byKind[kind].get(parsed.contentId);
      if (names === undefined) byKind[kind].set(parsed.contentId, (names = new Set()));
      names.add(name);
      if (!trackedAt.has(at(kind, name))) trackedAt.set(at(kind, name), isLoading ? 0 : Date.now());
    },
    find: (kind, contentId) => [...(byKind[kind].get(contentId) ?? [])],
    forget(kind, name) {
      const parsed = parseInflightName(name);
      if (parsed === null) return;
      const names = byKind[kind].get(parsed.contentId);
      names?.delete(name);
      if (names?.size === 0) byKind[kind].delete(parsed.contentId);
      trackedAt.delete(at(kind, name));
    },
    all: (kind) => [...byKind[kind].values()].flatMap((names) => [...names]),
    olderThan: (kind, before) => index.all(kind).filter((name) => (trackedAt.get(at(kind, name)) ?? 0) < before),
    trackedAt: (kind, name) => trackedAt.get(at(kind, name)) ?? null,
    async adoptUntracked() {
      let adopted = 0;
      for (const kind of SPOOL_KINDS) {
        for (const name of await inflightNames(paths, kind)) {
          if (trackedAt.has(at(kind, name)) || parseInflightName(name) === null) continue;
          index.track(kind, name);
          adopted += 1;
        }
      }
      return adopted;
    },
  };
  let isLoading = true;
  for (const kind of SPOOL_KINDS) for (const name of await inflightNames(paths, kind)) index.track(kind, name);
  isLoading = false;
  return index;
}

async function inflightNames(paths: SpoolPaths, kind: SpoolKind): Promise<string[]> {
  return readdir(paths.inflight(kind)).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[];
    throw error;
  });
}
