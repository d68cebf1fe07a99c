/**
 * The spool's identity lives in the spool: `<spool>/.spool-id`, written at the first start. Every
 * process and host mounting the folder reads the same id, so they agree on the spool's lease and its
 * outcome messages. The file is written whole to a temporary name and then hard-linked to its name,
 * which fails if the name exists: of two processes starting at once on one share, one writes it
 * and the other reads what the first wrote (never a half-written file).
 *
 * A spool without the file gets the id the folder had before the file existed (a hash of host name
 * and folder, or the configured id), so an upgraded deployment keeps its outcome messages.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { configRefusal } from '../../config/refusal.js';
import type { Logger } from '../../log.js';
import { defaultSpoolId } from '../paths.js';

export const SPOOL_ID_FILE = '.spool-id';
const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export interface SpoolIdentity {
  spoolId: string;
  /** Where it came from: the file, the file just written, or the configured override. */
  source: 'file' | 'created' | 'config';
}

/** Reads the spool's id from its file, writing the file first if it has none. `configured` wins. */
export async function resolveSpoolId(dir: string, configured: string | null, logger: Logger): Promise<SpoolIdentity> {
  const root = resolve(dir);
  await ensureSpoolRoot(root, logger);
  const path = join(root, SPOOL_ID_FILE);
  let stored = await readSpoolIdFile(root);
  let isCreated = false;
  if (stored === null) {
    const temp = join(root, `${SPOOL_ID_FILE}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      // Inside the try: a write that fails (a full disk) leaves an empty temp file to remove.
      await writeFile(temp, `${configured ?? defaultSpoolId(root)}\n`, { flag: 'wx' });
      await link(temp, path);
      isCreated = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    stored = await readSpoolIdFile(root);
    if (stored === null) throw configRefusal('config.error.spoolIdVanished', { path });
  }
  if (configured !== null) {
    if (configured !== stored) logger.warn({ spoolId: configured, spoolIdFile: path, fileSays: stored }, `CARRIER_SYNC_SPOOL_ID overrides ${SPOOL_ID_FILE}: processes on this folder without the override use another id, and another lease`);
    return { spoolId: configured, source: 'config' };
  }
  return { spoolId: stored, source: isCreated ? 'created' : 'file' };
}

/**
 * The spool root is made when its parent folder exists, never the parent itself: a spool on a share
 * that is not mounted (`/mnt/share/spool`) must not become an empty folder on the local disk that is
 * watched while files pile up on the share. So a missing parent is refused (one line, exit 2), and
 * a root that is a file too. The inboxes under an existing root are made by the watcher.
 */
export async function ensureSpoolRoot(root: string, logger: Logger): Promise<void> {
  try {
    await mkdir(root);
    logger.info({ spoolDir: root }, 'created the spool folder');
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw configRefusal('config.error.spoolParentMissing', { parent: dirname(root), root });
    }
    if (code !== 'EEXIST') throw error;
  }
  if (!(await stat(root)).isDirectory()) throw configRefusal('config.error.spoolNotFolder', { root });
}

/** The id in `<root>/.spool-id`, or null when there is no such file. A file holding anything else is an error. */
export async function readSpoolIdFile(root: string): Promise<string | null> {
  const path = join(resolve(root), SPOOL_ID_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const id = text.trim();
  if (!ID_PATTERN.test(id)) throw configRefusal('config.error.spoolIdFile', { path });
  return id;
}
