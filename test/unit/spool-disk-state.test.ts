/**
 * The spool's disk state through the spool's real file calls, without a mount: writing to
 * /dev/full fails with ENOSPC (a full disk, for the file calls), writing to a temp folder succeeds.
 * The full-disk test on a real tmpfs is test/integration/spool-disk-full.test.ts.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { attachSpoolDisk, isDiskFullError, spoolDisk, spoolDiskRecoveries } from '../../src/spool/disk-state.js';
import { fileCallsOf } from '../../src/spool/file-calls.js';
import { waitFor } from '../support/wait.js';

const lines: Array<{ level: number; msg: string }> = [];
const destination = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const text of chunk.toString().split('\n')) if (text !== '') lines.push(JSON.parse(text) as { level: number; msg: string });
    done();
  },
});
const dir = await mkdtemp(join(tmpdir(), 'cs-disk-state-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe.skipIf(!existsSync('/dev/full'))('the spool disk state', () => {
  it('turns full on the first ENOSPC (one warning however many follow) and back on the next write that succeeds (one info)', async () => {
    // A root that does not exist: the probe (a write there every 2 s while full) cannot succeed and end the state early.
    attachSpoolDisk({ spoolId: 'unit-spool', root: join(dir, 'no-such-root') }, createLogger({ level: 'debug', destination }));
    for (const disk of ['local', 'share'] as const) {
      const calls = fileCallsOf(disk);
      const recoveries = spoolDiskRecoveries();
      expect(spoolDisk()).toMatchObject({ spoolId: 'unit-spool', isFull: false, fullSince: null });
      for (let i = 0; i < 5; i += 1) await expect(calls.writeFile('/dev/full', 'a report')).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(spoolDisk()).toMatchObject({ isFull: true, code: 'ENOSPC' });
      // A failure that is not a full disk changes nothing.
      await expect(calls.writeFile(join(dir, 'no-such-folder', 'x'), 'x')).rejects.toMatchObject({ code: 'ENOENT' });
      await calls.writeFile(join(dir, `${disk}-a`), 'a');
      expect(spoolDisk().isFull).toBe(false);
      expect(spoolDiskRecoveries()).toBe(recoveries + 1);
      await calls.writeFile(join(dir, `${disk}-b`), 'b');
      expect(spoolDiskRecoveries()).toBe(recoveries + 1);
    }
    expect(lines.filter((line) => line.level >= 40).map((line) => line.msg)).toEqual([
      'spool disk full: files wait where they are (inbox or in flight) and are taken up again once writes succeed',
      'spool disk full: files wait where they are (inbox or in flight) and are taken up again once writes succeed',
    ]);
    expect(lines.filter((line) => line.msg === 'spool disk: writes succeed again')).toHaveLength(2);
  });

  it('while full, a probe write in the spool root notices the room without waiting for a spool write, and leaves no file', async () => {
    attachSpoolDisk({ spoolId: 'unit-spool', root: dir }, createLogger({ level: 'debug', destination }));
    const recoveries = spoolDiskRecoveries();
    await expect(fileCallsOf('local').writeFile('/dev/full', 'a report')).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(spoolDisk().isFull).toBe(true);
    await waitFor(() => !spoolDisk().isFull, { what: 'the probe to find room', timeoutMs: 10_000 });
    expect(spoolDiskRecoveries()).toBe(recoveries + 1);
    expect((await readdir(dir)).filter((name) => name.startsWith('.spool-disk-probe'))).toEqual([]);
  });

  it('counts ENOSPC and EDQUOT as a full disk, nothing else', () => {
    expect(isDiskFullError(Object.assign(new Error('x'), { code: 'ENOSPC' }))).toBe(true);
    expect(isDiskFullError(Object.assign(new Error('x'), { code: 'EDQUOT' }))).toBe(true);
    expect(isDiskFullError(Object.assign(new Error('x'), { code: 'EACCES' }))).toBe(false);
    expect(isDiskFullError(null)).toBe(false);
  });
});
