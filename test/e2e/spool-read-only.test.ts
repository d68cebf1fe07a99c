/**
 * A spool whose file system is read-only: a volume mounted so by mistake, or ext4 remounted so by
 * the kernel after a disk error (`errors=remount-ro`). Before, each claim pass logged an error with
 * its stack for every waiting file (EROFS was no permission refusal to the claim), and `start`
 * ended with a fatal line and a temporary file's stack. Now: one warning a kind saying the file
 * system is read-only, the files waiting in the inbox, one line when they move again; `start`
 * refuses with one line saying what to mount (exit 2).
 *
 * Run for real, on a tmpfs of the test's own remounted read-only: that takes root (CI runs as root);
 * elsewhere the test is skipped.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const canMount = ((): boolean => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let env: E2eEnv | undefined;
let mounted: string | undefined;
afterEach(async () => {
  await killAllDaemons();
  // Lazy: nothing of the test may keep the folder busy past this point, and the tmpfs goes with it.
  if (mounted !== undefined) execFileSync('umount', ['-l', mounted]);
  mounted = undefined;
  await env?.close();
  env = undefined;
});

const READ_ONLY =
  "may not move files out of the inbox: the spool's file system is read-only (mounted so, or remounted so after a disk error); files wait in the inbox until it may be written again";

const QUIET_LOOK = 'claim refused a move (permissions, or a read-only file system); will try again';

const remount = (dir: string, mode: 'ro' | 'rw'): void => void execFileSync('mount', ['-o', `remount,${mode}`, dir]);

describe.runIf(canMount)('a spool on a read-only file system', () => {
  it('is said once a kind while the files wait in the inbox, and they go once it may be written again; start refuses with what to mount', async () => {
    // The claim waits 2 s for a file to stay still: time to remount the spool under it.
    const e = (env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true } }));
    // At debug, each quiet look shows: the test waits for two of them.
    const daemonEnv = { ...e.env, CARRIER_SYNC_WRITE_STABLE_MS: '2000', LOG_LEVEL: 'debug' };
    await mkdir(e.spool);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', e.spool]);
    mounted = e.spool;

    const daemon = spawnDaemon(daemonEnv, { args: e.args('start') });
    await waitUntilStarted(daemon, 30_000);
    const ids = [randomUUID(), randomUUID()];
    for (const id of ids) {
      await writeFile(join(e.spool, 'labels', `.${id}.pdf.tmp`), await makePdf(id));
      await rename(join(e.spool, 'labels', `.${id}.pdf.tmp`), join(e.spool, 'labels', `${id}.pdf`));
    }
    remount(e.spool, 'ro');
    await daemon.waitForLog((line) => line.msg === READ_ONLY && line['kind'] === 'labels', { what: 'the read-only file system said', timeoutMs: 15_000 });
    expect(daemon.logs().find((line) => line.msg === READ_ONLY)).toMatchObject({ code: 'EROFS' });
    // Looked at again (1, 2, 4… s) without a line each at info: two more looks, then opened.
    const looks = (): number => daemon.logs().filter((line) => line.msg === READ_ONLY).length;
    expect((await listFiles(join(e.spool, 'labels'))).sort()).toEqual(ids.map((id) => `${id}.pdf`).sort());
    expect(e.sandbox.requests().filter((r) => r.endpoint === 'label')).toEqual([]);
    await waitFor(() => daemon.logs().filter((line) => line.msg === QUIET_LOOK).length >= 2, { what: 'the files looked at again, quietly', timeoutMs: 15_000 });
    // The overview says it too, in the reader's language: before, it said "Working: 2 items to send".
    const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
    const overview = async (): Promise<{ state: { code: string; claims?: unknown } }> =>
      (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { state: { code: string; claims?: unknown } };
    expect((await overview()).state).toMatchObject({ code: 'claims-refused', claims: { code: 'EROFS', folder: join(e.spool, 'labels'), kinds: ['labels'] } });
    const page = await (await fetch(`${opsUrl}/ui`, { headers: { 'accept-language': 'pt-BR' } })).text();
    expect(page).toContain('Arquivos aguardam na pasta de entrada');
    expect(page).toContain('O sistema de arquivos do spool está somente leitura');
    const refusedGauge = async (): Promise<string | undefined> =>
      (await (await fetch(`${opsUrl}/metrics`)).text()).match(/^carrier_sync_spool_inbox_refused\{spool="[^"]+",kind="labels"\} (\d)$/m)?.[1];
    expect(await refusedGauge()).toBe('1');
    remount(e.spool, 'rw');
    await waitFor(async () => (await listFiles(join(e.spool, 'archive', 'labels'))).length === 2, {
      what: 'both labels archived once the spool may be written',
      timeoutMs: 30_000,
    });
    expect(looks()).toBe(1);
    expect((await overview()).state.code).not.toBe('claims-refused');
    expect(await refusedGauge()).toBe('0');
    expect(daemon.logs().some((line) => line.msg === 'files move out of the inbox again' && line['kind'] === 'labels')).toBe(true);
    expect(daemon.logs().filter((line) => (line.level ?? 0) >= 50)).toEqual([]);
    expect(e.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200)).toHaveLength(2);

    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);

    // A start on a read-only spool not made yet: one line, no stack. (One made already, its folders
    // in place, starts, and says it as above once a file waits: it goes on once it may be written.)
    remount(e.spool, 'ro');
    const fresh = join(e.spool, 'fresh');
    const refused = spawnDaemon({ ...daemonEnv, CARRIER_SYNC_SPOOL_DIR: fresh }, { args: e.args('start') });
    const exit = await refused.exited;
    expect(exit.code, refused.tail()).toBe(2);
    expect(refused.stderrLines.at(-1)).toMatch(
      new RegExp(
        `^carrier-sync: the spool's file system is read-only: EROFS on ${fresh}\\. Mount it read-write \\(after a disk error, check the disk first\\), or set CARRIER_SYNC_SPOOL_DIR`,
      ),
    );
    expect(refused.stderrLines.some((line) => line.includes('"stack"'))).toBe(false);
  }, 90_000);
});
