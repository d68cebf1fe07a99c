/**
 * An inbox folder replaced under a running daemon (inotify mode): moved away and made again, or
 * removed and made again later. inotify follows the old folder, so before the fix the files dropped
 * into the new one waited for the periodic rescan, each — here a minute away, beyond every wait of
 * this test: a file is archived within its bound only if the new folder is watched.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { waitFor } from '../support/wait.js';

const REPLACED = 'inbox folder replaced: watching the folder at its path now';
const REMOVED = 'inbox folder removed: files dropped at its path are seen once it is there again';

let running: TestDaemon | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** Drops a label as a careful producer does: a temporary name, then a rename. */
async function dropLabel(t: TestDaemon): Promise<string> {
  const id = randomUUID();
  const inbox = join(t.spool, 'labels');
  await writeFile(join(inbox, `${id}.pdf.tmp`), await makePdf(id));
  await rename(join(inbox, `${id}.pdf.tmp`), join(inbox, `${id}.pdf`));
  return id;
}

async function whenArchived(t: TestDaemon, id: string, what: string): Promise<void> {
  await waitFor(async () => (await readdir(join(t.spool, 'archive', 'labels'), { recursive: true })).some((name) => String(name).endsWith(`${id}.pdf`)), {
    timeoutMs: 10_000,
    what,
  });
}

describe('an inbox folder replaced while the daemon runs', () => {
  it('watches the folder at the inbox path again: moved away and made again, or removed and made again later', async () => {
    const lines: Array<Record<string, unknown>> = [];
    running = await startTestDaemon({ sandbox: { autoCreateDeliveries: true }, settings: { spool: { rescanIntervalMs: 60_000 } }, logLines: lines });
    const t = running;
    const inbox = join(t.spool, 'labels');
    await whenArchived(t, await dropLabel(t), 'a label dropped into the first folder archived');

    // Moved away and made again (a cleanup script's rotation).
    await rename(inbox, join(t.spool, 'labels.old'));
    await mkdir(inbox);
    await waitFor(() => lines.some((line) => line['msg'] === 'inbox folder replaced: watching the folder at its path now'), {
      what: 'the replaced folder noticed',
    });
    await whenArchived(t, await dropLabel(t), 'a label dropped into the new folder archived');

    // Removed, then made again a little later.
    const removed = (from: number): number => lines.slice(from).filter((line) => line['msg'] === REMOVED).length;
    const replaced = (): number => lines.filter((line) => line['msg'] === REPLACED).length;
    const atRemoval = lines.length;
    await rm(inbox, { recursive: true });
    await waitFor(() => removed(atRemoval) > 0, { what: 'the removed folder said' });
    const replacedBefore = replaced();
    await mkdir(inbox);
    await waitFor(() => replaced() > replacedBefore, { what: 'the folder made again noticed' });
    await whenArchived(t, await dropLabel(t), 'a label dropped into the folder made again archived');
    // Said once while it was gone, not at every look for it.
    expect(removed(atRemoval)).toBe(1);
  });
});
