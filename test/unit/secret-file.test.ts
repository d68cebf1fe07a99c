/** config/secret-file.ts: a `*_FILE` secret follows its file, keeping its last good value through a bad read. */
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { liveSecret } from '../../src/config/secret-file.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('liveSecret', () => {
  it('reads the file again once a second has passed, or at once on refresh(); a bad read keeps the last good value', async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-secret-'));
    const file = join(dir, 'key');
    await writeFile(file, 'first\n');
    let now = 0;
    const secret = liveSecret({ KEY_FILE: file }, 'KEY', 'first', () => now);
    await writeFile(file, 'second\n');
    expect(secret.current(), 'within the second: the value read last').toBe('first');
    now = 1000;
    expect(secret.current()).toBe('second');
    await writeFile(file, 'third');
    expect(secret.refresh()).toBe('third');
    for (const bad of ['', '  \n', 'half\nwritten']) {
      await writeFile(file, bad);
      expect(secret.refresh(), JSON.stringify(bad)).toBe('third');
    }
    await unlink(file);
    expect(secret.refresh(), 'a file gone for a moment').toBe('third');
  });

  it('a secret set in the variable itself never changes, whatever its _FILE holds', async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-secret-'));
    const file = join(dir, 'key');
    await writeFile(file, 'from-file');
    const secret = liveSecret({ KEY: 'direct', KEY_FILE: file }, 'KEY', 'direct', () => 5000);
    expect(secret.refresh()).toBe('direct');
    expect(secret.current()).toBe('direct');
  });
});
