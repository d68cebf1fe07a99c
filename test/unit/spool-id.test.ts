/**
 * The spool's id file: written once at the first start, read by every later start, agreed on by
 * processes starting at once, overridable, and compatible with spools from before the file.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { SyncError } from '../../src/errors.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { resolveSpoolId, SPOOL_ID_FILE } from '../../src/spool/lease/spool-id.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempSpool(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-spool-id-'));
  dirs.push(dir);
  return join(dir, 'spool');
}

describe('the spool id file', () => {
  it('is written at the first start with the id the spool had before (hash of host name and folder), then read back', async () => {
    const spool = await tempSpool();
    const before = createHash('sha256').update(`${hostname()}:${spool}`).digest('hex').slice(0, 12);
    expect(await resolveSpoolId(spool, null, silentLogger)).toEqual({ spoolId: before, source: 'created' });
    expect(await readFile(join(spool, SPOOL_ID_FILE), 'utf8')).toBe(`${before}\n`);
    expect(await resolveSpoolId(spool, null, silentLogger)).toEqual({ spoolId: before, source: 'file' });
    // No temporary file is left beside it.
    expect(await readdir(spool)).toEqual([SPOOL_ID_FILE]);
  });

  it('is what every process reads, whatever its host: an id written elsewhere is kept', async () => {
    const spool = await tempSpool();
    await resolveSpoolId(spool, null, silentLogger);
    await writeFile(join(spool, SPOOL_ID_FILE), 'written-on-host-a\n');
    expect(await resolveSpoolId(spool, null, silentLogger)).toEqual({ spoolId: 'written-on-host-a', source: 'file' });
  });

  it('ten processes starting at once agree on one id, and exactly one of them wrote it', async () => {
    const spool = await tempSpool();
    const results = await Promise.all(Array.from({ length: 10 }, () => resolveSpoolId(spool, null, silentLogger)));
    const fromFile = (await readFile(join(spool, SPOOL_ID_FILE), 'utf8')).trim();
    expect(results.filter((r) => r.source === 'created')).toHaveLength(1);
    expect(new Set(results.map((r) => r.spoolId))).toEqual(new Set([fromFile]));
    expect((await readdir(spool)).filter((name) => name !== SPOOL_ID_FILE)).toEqual([]);
  });

  it('CARRIER_SYNC_SPOOL_ID overrides it, is written when the spool has none, and a mismatch is logged', async () => {
    const spool = await tempSpool();
    expect(await resolveSpoolId(spool, 'warehouse-1', silentLogger)).toEqual({ spoolId: 'warehouse-1', source: 'config' });
    expect(await resolveSpoolId(spool, null, silentLogger)).toEqual({ spoolId: 'warehouse-1', source: 'file' });
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', destination: new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) }) });
    expect(await resolveSpoolId(spool, 'warehouse-2', logger)).toEqual({ spoolId: 'warehouse-2', source: 'config' });
    expect(lines.join('')).toContain('overrides .spool-id');
    expect(lines.join('')).toContain('"fileSays":"warehouse-1"');
  });

  it('a file holding something else is a configuration error naming the file', async () => {
    const spool = await tempSpool();
    await resolveSpoolId(spool, null, silentLogger);
    await writeFile(join(spool, SPOOL_ID_FILE), 'not an id!\n');
    const error = await resolveSpoolId(spool, null, silentLogger).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((error as Error).message).toContain(join(spool, SPOOL_ID_FILE));
  });

  it('a spool whose parent folder does not exist (a share not mounted) is refused with one line, and nothing is made', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cs-spool-id-'));
    dirs.push(dir);
    const spool = join(dir, 'share-not-mounted', 'spool');
    const error = await resolveSpoolId(spool, null, silentLogger).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((error as Error).message).toMatch(/does not exist, so the spool .* is not made in it \(a share not mounted\?\).*CARRIER_SYNC_SPOOL_DIR/);
    expect((error as Error).message).not.toContain('\n');
    expect(await readdir(dir)).toEqual([]);
  });

  it('a spool root whose parent exists is made, and a root that is a file is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cs-spool-id-'));
    dirs.push(dir);
    await resolveSpoolId(join(dir, 'spool'), null, silentLogger);
    expect((await stat(join(dir, 'spool'))).isDirectory()).toBe(true);
    await mkdir(join(dir, 'x'));
    await writeFile(join(dir, 'x', 'spool'), 'a file');
    await expect(resolveSpoolId(join(dir, 'x', 'spool'), null, silentLogger)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/is not a folder/),
    });
  });
});
