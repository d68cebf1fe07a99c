/**
 * Files waiting in each inbox, for the `/ui` overview: the ops server may not import `spool/`, so
 * the runtime hands it this function. A process that cannot read the spool (an http-only process
 * on another machine) leaves the kind out, and the page shows "n/a".
 */
import { readdir } from 'node:fs/promises';
import type { Config } from '../../config/schema.js';
import { SPOOL_KINDS, type SpoolKind } from '../../store/keys.js';
import { spoolPaths } from '../../spool/paths.js';
import { readSpoolIdFile } from '../../spool/lease/spool-id.js';
import { isIgnoredName } from '../../validate/spool-name.js';

export function inboxCounter(spool: Config['spool']): () => Promise<Partial<Record<SpoolKind, number>>> {
  const paths = spoolPaths(spool.dir, spool.id);
  return async () => {
    const counts: Partial<Record<SpoolKind, number>> = {};
    await Promise.all(
      SPOOL_KINDS.map(async (kind) => {
        try {
          const entries = await readdir(paths.inbox(kind), { withFileTypes: true });
          counts[kind] = entries.filter((entry) => entry.isFile() && !isIgnoredName(entry.name)).length;
        } catch {
          // Not readable from here: left out.
        }
      }),
    );
    return counts;
  };
}

/**
 * The id of the spool this config names: the configured one, else the spool's `.spool-id` file,
 * else the id its first watcher will write there (derived from host and path).
 */
export async function spoolIdOf(spool: Config['spool']): Promise<string> {
  return spool.id ?? (await readSpoolIdFile(spool.dir).catch(() => null)) ?? spoolPaths(spool.dir, null).spoolId;
}
