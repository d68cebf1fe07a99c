/**
 * A file carrier-sync may not read: its writer runs as another user and makes its files 0600. Before,
 * every claim pass (each writeStableMs) logged an error with its stack, for ever, and the file never
 * left the inbox. Now: one warning, looks again after 1, 2, 4… s, and once `spool.unreadableRefuseMs`
 * passed, failed/ with SPOOL_UNREADABLE, its report naming the file's owner and mode and the user
 * carrier-sync runs as; a file made readable meanwhile is sent; the readable files go on meanwhile.
 *
 * Run for real, not by faking an error: as root (CI) the daemon runs as `nobody` (setpriv), since
 * root reads whatever the mode says; as another user, as that user, with the files at mode 000.
 */
import { randomUUID } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { startHttpReceiver, type HttpReceiver } from '../support/notify-receivers.js';
import { binArgv, killAllDaemons, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

let env: E2eEnv | undefined;
let receiver: HttpReceiver | undefined;
afterEach(async () => {
  await killAllDaemons();
  await env?.close();
  env = undefined;
  await receiver?.close();
  receiver = undefined;
});

const isRoot = process.getuid?.() === 0;
const WARNING = 'may not read the file (permission denied); looking again, then refusing it';
const FOLDER_DENIED =
  'may not move files out of the inbox (permission denied): give carrier-sync write access to the spool folders; files wait in the inbox meanwhile';

describe('a file carrier-sync may not read', () => {
  it('is said once, looked at again, and refused to failed/ with who owns it and who we are; one made readable meanwhile is sent; a folder it may not write in is said once', async () => {
    const e = (env = await createE2eEnv({ sandbox: { autoCreateDeliveries: true }, settings: { spool: { unreadableRefuseMs: 3000 } } }));
    const args = e.args('start');
    let daemonUid = process.getuid?.() ?? 0;
    if (isRoot) {
      // The daemon's user must reach its config and own its spool.
      daemonUid = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
      await chmod(e.dir, 0o755);
      await mkdir(e.spool);
      await chown(e.spool, daemonUid, Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim()));
    }
    const daemon = isRoot
      ? spawnDaemon(e.env, { file: 'setpriv', args: ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, ...binArgv(args)] })
      : spawnDaemon(e.env, { args });
    await waitUntilStarted(daemon, 30_000);

    const inbox = join(e.spool, 'labels');
    const drop = async (mode: number): Promise<string> => {
      const id = randomUUID();
      await writeFile(join(inbox, `.${id}.pdf.tmp`), await makePdf(id));
      await chmod(join(inbox, `.${id}.pdf.tmp`), mode);
      await rename(join(inbox, `.${id}.pdf.tmp`), join(inbox, `${id}.pdf`));
      return id;
    };
    const closedMode = isRoot ? 0o600 : 0o000;
    const never = await drop(closedMode);
    const later = await drop(closedMode);
    const readable = await drop(0o644);

    await waitFor(() => daemon.logs().some((line) => line.msg === WARNING && line['file'] === `${later}.pdf`), {
      what: 'the warning for the file made readable later',
    });
    await chmod(join(inbox, `${later}.pdf`), 0o644);

    const archived = async (): Promise<string[]> => (await listFiles(join(e.spool, 'archive', 'labels'))).map((path) => path.split('/').at(-1)!);
    await waitFor(async () => (await archived()).length === 2, { what: 'the readable label and the one made readable archived' });
    expect((await archived()).sort()).toEqual([`${later}.pdf`, `${readable}.pdf`].sort());

    const failed = join(e.spool, 'failed', 'labels', `${never}.pdf`);
    await waitFor(async () => (await listFiles(join(e.spool, 'failed', 'labels'))).includes(`${never}.pdf`), { what: 'the unreadable label in failed/' });
    const report = JSON.parse(await readFile(`${failed}.error.json`, 'utf8')) as { code: string; message: string; deliveryId: string | null };
    expect(report.code).toBe('SPOOL_UNREADABLE');
    expect(report.deliveryId).toBe(never);
    expect(report.message).toContain(`mode ${closedMode.toString(8).padStart(4, '0')}`);
    expect(report.message).toContain(`carrier-sync runs as user ${daemonUid}`);

    // Said once a file, not at every look; no error lines with stacks.
    expect(daemon.logs().filter((line) => line.msg === WARNING && line['file'] === `${never}.pdf`)).toHaveLength(1);
    expect(daemon.logs().filter((line) => line.msg === 'claim failed; will try again')).toEqual([]);
    expect(
      e.sandbox
        .requests()
        .filter((r) => r.endpoint === 'label' && r.status === 200)
        .map((r) => r.deliveryId)
        .sort(),
    ).toEqual([later, readable].sort());

    // An inbox folder carrier-sync may not write in: its files wait, said once, and go once it may.
    // Taking a folder away from the daemon's user takes root: this part runs where CI runs, as root.
    if (!isRoot) return;
    const cteInbox = join(e.spool, 'cte');
    await chown(cteInbox, 0, 0);
    await chmod(cteInbox, 0o755);
    const ids = [randomUUID(), randomUUID()];
    for (const id of ids) await writeFile(join(cteInbox, `${id}.xml`), makeCteXml({ nCT: '4242' }));
    await waitFor(() => daemon.logs().some((line) => line.msg === FOLDER_DENIED && line['kind'] === 'cte'), { what: 'the folder refusing the move said' });
    await chmod(cteInbox, 0o777);
    await waitFor(async () => (await listFiles(join(e.spool, 'archive', 'cte'))).length === 2, { what: 'both CT-es archived once the folder lets them move' });
    expect(daemon.logs().filter((line) => line.msg === FOLDER_DENIED)).toHaveLength(1);
    expect(daemon.logs().some((line) => line.msg === 'files move out of the inbox again' && line['kind'] === 'cte')).toBe(true);
    expect(daemon.logs().filter((line) => line.msg === 'claim failed; will try again')).toEqual([]);
  }, 60_000);

  it.runIf(isRoot)(
    'an archive folder it may not write in: the moves wait, said once with the folder (not a line a file and a try), and go once it may',
    async () => {
      // The spool-moves-failing notification after 3 s (15 minutes by default), to a webhook.
      const webhook = (receiver = await startHttpReceiver());
      const e = (env = await createE2eEnv({
        sandbox: { autoCreateDeliveries: true },
        settings: { notify: { movesFailingMinutes: 0.05, checkIntervalMs: 200 } },
      }));
      await chmod(e.dir, 0o755);
      await mkdir(e.spool);
      const nobody = {
        uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim()),
      };
      await chown(e.spool, nobody.uid, nobody.gid);
      // archive/labels/ is root's: the day's folder under it cannot be made.
      await mkdir(join(e.spool, 'archive', 'labels'), { recursive: true });
      await chown(join(e.spool, 'archive'), nobody.uid, nobody.gid);
      // At debug, each quiet try shows: the test counts them.
      const daemon = spawnDaemon(
        { ...e.env, LOG_LEVEL: 'debug', CARRIER_SYNC_NOTIFY_WEBHOOK_URL: webhook.url },
        { file: 'setpriv', args: ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, ...binArgv(e.args('start'))] },
      );
      await waitUntilStarted(daemon, 30_000);
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      for (const id of ids) {
        await writeFile(join(e.spool, 'labels', `.${id}.pdf.tmp`), await makePdf(id));
        await rename(join(e.spool, 'labels', `.${id}.pdf.tmp`), join(e.spool, 'labels', `${id}.pdf`));
      }
      const SAID = (msg: unknown): boolean => String(msg).startsWith('moving files failed: carrier-sync may not write in this spool folder');
      await waitFor(() => e.sandbox.requests().filter((r) => r.endpoint === 'label' && r.status === 200).length === 3, { what: 'the three labels sent' });
      // Each move is tried at least twice (after 1 s, then 2 s) before the folder is opened.
      await waitFor(() => daemon.logs().filter((line) => line.msg === 'moving a file failed: the spool may not be written there; will retry').length >= 5, {
        what: 'the moves tried again, quietly',
        timeoutMs: 20_000,
      });
      expect(daemon.logs().filter((line) => SAID(line.msg))).toHaveLength(1);
      expect(daemon.logs().find((line) => SAID(line.msg))).toMatchObject({ code: 'EACCES', folder: join(e.spool, 'archive', 'labels') });
      expect(daemon.logs().filter((line) => line.msg === 'moving a file failed; will retry')).toEqual([]);
      // The overview says it too: its state, in the reader's language.
      const opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
      const overview = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { state: { code: string; moves?: { code: string; folder: string } } };
      expect(overview.state).toMatchObject({ code: 'moves-refused', moves: { code: 'EACCES', folder: join(e.spool, 'archive', 'labels') } });
      const page = await (await fetch(`${opsUrl}/ui`, { headers: { 'accept-language': 'pt-BR' } })).text();
      expect(page).toContain('Arquivos enviados mas não movidos');
      // And a person without the page or Prometheus is told: once, with how many wait.
      const told = (state: string): unknown[] =>
        webhook.received
          .map((delivery) => delivery.json as { condition: string; state: string })
          .filter((n) => n.condition === 'spool-moves-failing' && n.state === state);
      await waitFor(() => told('firing').length === 1, { what: 'spool-moves-failing firing on the webhook' });
      expect(told('firing')[0]).toMatchObject({ details: { retrying: 3, failed: 0 } });
      // Opened while every waiting move's own retry is at least 6 s away (the folders are looked at
      // every 2 s): moved sooner, they were moved by the look. Opened at any moment, a retry came due
      // before the look in some runs (1 of 3 clean-clone CI runs) and moved the files itself.
      const admin = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
      try {
        const retries = `${e.prefix}:outcomes:${(await admin.smembers(`${e.prefix}:spools`))[0] ?? ''}:retry`;
        await waitFor(
          async () => {
            const [count, first] = await Promise.all([admin.zcard(retries), admin.zrange(retries, 0, 0, 'WITHSCORES')]);
            return count === 3 && Number(first[1]) >= Date.now() + 6000;
          },
          { what: "every waiting move's retry 6 s away", timeoutMs: 40_000, intervalMs: 50 },
        );
      } finally {
        admin.disconnect();
      }
      await chmod(join(e.spool, 'archive', 'labels'), 0o777);
      await waitFor(async () => (await listFiles(join(e.spool, 'archive', 'labels'))).length === 3, {
        what: 'the three labels archived once it may',
        timeoutMs: 20_000,
      });
      // The line follows the move that worked (the file is in archive/ before it is logged).
      await waitFor(() => daemon.logs().some((line) => line.msg === 'files move again'), { what: "'files move again' said" });
      expect(daemon.logs().find((line) => line.msg === 'files move again')?.['failedMoves']).toBeGreaterThanOrEqual(6);
      // Seen open again by the look at the folder, not at the retries' own time (1, 2, 4… s on, up to an hour).
      const messages = daemon.logs().map((line) => line.msg);
      const reopened = messages.indexOf('a spool folder that refused moves may be written in again: the files waiting for it are moved now');
      expect(reopened).toBeGreaterThan(-1);
      expect(reopened).toBeLessThan(messages.indexOf('files move again'));
      const after = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { state: { code: string } };
      expect(after.state.code).not.toBe('moves-refused');
      await waitFor(() => told('resolved').length === 1, { what: 'spool-moves-failing resolved on the webhook' });
      expect(told('firing')).toHaveLength(1);
      expect(daemon.logs().filter((line) => SAID(line.msg))).toHaveLength(1);
    },
    60_000,
  );

  it.runIf(isRoot)(
    'a managed redis-server folder the daemon may not make refuses the start: one line naming the path, the user and what to do, exit 2',
    async () => {
      const e = (env = await createE2eEnv());
      await chmod(e.dir, 0o755);
      await mkdir(e.spool);
      await chown(
        e.spool,
        Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim()),
        Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim()),
      );
      // No REDIS_URL: the daemon would run its own redis-server, with its data under a folder of root's.
      const dir = join(e.dir, 'var', 'redis');
      const daemon = spawnDaemon(
        { ...e.env, REDIS_URL: undefined, CARRIER_SYNC_REDIS_DIR: dir },
        { file: 'setpriv', args: ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, ...binArgv(e.args('start'))] },
      );
      const exit = await daemon.exited;
      expect(exit.code, daemon.tail()).toBe(2);
      const uid = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
      expect(daemon.stderrLines.at(-1)).toBe(
        `carrier-sync: the user carrier-sync runs as (${uid}) may not write the managed redis-server's data: EACCES on ${join(e.dir, 'var')}. Give that user write access to ${dir}, set CARRIER_SYNC_REDIS_DIR to a folder it may write in, or give a Redis with REDIS_URL`,
      );
      expect(daemon.stderrLines.some((line) => line.includes('"stack"'))).toBe(false);
    },
  );

  it.runIf(isRoot)('a spool the daemon may not write in refuses the start: one line naming the path and the user, exit 2', async () => {
    const e = (env = await createE2eEnv());
    await chmod(e.dir, 0o755);
    await mkdir(e.spool, { mode: 0o755 });
    const daemon = spawnDaemon(e.env, {
      file: 'setpriv',
      args: ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, ...binArgv(e.args('start'))],
    });
    const exit = await daemon.exited;
    expect(exit.code).toBe(2);
    const uid = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
    expect(daemon.stderrLines.at(-1)).toMatch(
      new RegExp(`^carrier-sync: the user carrier-sync runs as \\(${uid}\\) may not write in the spool: EACCES on ${e.spool}/`),
    );
    expect(daemon.stderrLines.some((line) => line.includes('"stack"'))).toBe(false);
  });
});
