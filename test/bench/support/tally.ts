/** Counting what a drop left, for the drop scenarios' checks: counts by key, shown and compared, and the files under a folder. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** How many items have each key, keys in order. */
export const countBy = <T>(items: readonly T[], key: (item: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
};

/** `key count, key count` ('none' for no counts). */
export const show = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

export const isSame = (a: Record<string, number>, b: Record<string, number>): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Every file under `dir`, as full paths (none when it does not exist). */
export async function listFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}
