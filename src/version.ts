/**
 * The version of carrier-sync that is running, read once from its package.json: operators ask
 * "which version is running?" first when something looks wrong (`--version`, `/healthz`,
 * `/metrics`, `status`, the overview). The file is found by walking up from this module, so it
 * works from `src/` (tests), from `dist/src/` (the built binary) and from an installed package.
 * A leaf like clock.ts; its one read happens at first use.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'carrier-sync';

let cached: string | undefined;

/** The `version` of carrier-sync's package.json; '0.0.0-unknown' if it cannot be found. */
export function appVersion(): string {
  cached ??= readVersion(dirname(fileURLToPath(import.meta.url)));
  return cached;
}

function readVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const found = versionIn(join(dir, 'package.json'));
    if (found !== null) return found;
    if (dirname(dir) === dir) return '0.0.0-unknown';
  }
}

/** The version in `path` if it is carrier-sync's package.json; null for any other file or none. */
function versionIn(path: string): string | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
    return parsed.name === PACKAGE_NAME && typeof parsed.version === 'string' ? parsed.version : null;
  } catch {
    return null;
  }
}
