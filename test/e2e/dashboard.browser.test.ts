/**
 * The `/ui` overview in a real headless Chromium (Debian's /usr/bin/chromium; CI installs it, and a
 * machine without it fails here with a message rather than skipping). A daemon with every role runs
 * against the sandbox; the test drops a known mix of files and reads the page: sent, refused by
 * code, dead-lettered by code. It replays a dead letter from the page and sees it leave the list,
 * shows a 401 pause, and follows the links into bull-board (now under /ui/queues), where a dead
 * letter can still be cleaned. Screenshots (1280×800) go to test-artifacts/.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthGate } from '../../src/gate/auth-gate.js';
import { createKeys, ITEM_KINDS } from '../../src/store/keys.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { testRedisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = 'test-artifacts';
const UI_PASSWORD = 'dashboard-pass-3';
const FIXTURES = 'test/fixtures';
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

let t: TestDaemon;
let base: string;
let queues: QueueSet;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
const redis = connectRedis(testRedisUrl(), 'dashboard-test');

/** What the test drops, and so what the page must show. */
const good = { labels: [] as string[], cte: [] as string[] };
const unknown = [randomUUID(), randomUUID()];
let cancelled = '';

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => [] as string[]);
}

/** Files under `dir`, at any depth (archive/ has a folder per day). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) out.push(...(await filesUnder(join(dir, entry.name))));
    else out.push(entry.name);
  }
  return out;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install -y chromium); CI installs it`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestDaemon({ roles: ['watcher', 'worker', 'http'], env: { CARRIER_SYNC_UI_PASSWORD: UI_PASSWORD } });
  base = t.daemon.opsUrl()!;
  queues = openQueues(redis, t.prefix, t.config.delivery);

  // The mix: 4 labels and 2 CT-e the API accepts; 2 encrypted labels, 1 truncated label and 1
  // CT-e without its recipient, refused locally; 2 labels for unknown deliveries and 1 for a
  // cancelled one, which the API refuses (dead letters with two API codes).
  for (let i = 0; i < 4; i += 1) good.labels.push(t.sandbox.state.addDelivery().id);
  for (let i = 0; i < 2; i += 1) good.cte.push(t.sandbox.state.addDelivery().id);
  cancelled = t.sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id;
  const encrypted = await readFile(join(FIXTURES, 'labels', 'bad-encrypted-trailer.pdf'));
  const truncated = await readFile(join(FIXTURES, 'labels', 'bad-no-eof.pdf'));
  const missingDest = await readFile(join(FIXTURES, 'cte', 'cte-missing-dest.xml'));
  const labels = join(t.spool, 'labels');
  const cte = join(t.spool, 'cte');
  for (const id of good.labels) await writeFile(join(labels, `${id}.pdf`), await makePdf(id));
  for (const id of good.cte) await writeFile(join(cte, `${id}.xml`), makeCteXml());
  await writeFile(join(labels, 'ENC-0001.pdf'), encrypted);
  await writeFile(join(labels, 'ENC-0002.pdf'), encrypted);
  await writeFile(join(labels, 'CUT-0001.pdf'), truncated);
  await writeFile(join(cte, 'NODEST-0001.xml'), missingDest);
  for (const id of [...unknown, cancelled]) await writeFile(join(labels, `${id}.pdf`), await makePdf(`dl ${id}`));

  // Every file decided: 6 archived; 4 refused + 3 dead letters in failed/, each with its report.
  await waitFor(
    async () => {
      const archived = (await filesUnder(join(t.spool, 'archive'))).length;
      const failed = (await entries(join(t.spool, 'failed', 'labels'))).length + (await entries(join(t.spool, 'failed', 'cte'))).length;
      return archived === 6 && failed === 14 && (await queues.items.label.getFailedCount()) === 3;
    },
    { what: 'every dropped file archived or in failed/', timeoutMs: 30_000 },
  );

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context = await browser.newContext({ httpCredentials: { username: 'admin', password: UI_PASSWORD }, viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await queues?.close();
  await closeRedis(redis);
  await t?.stop();
});

const figure = (name: string): Locator => page.locator(`[data-figure="${name}"]`);
const textOf = async (locator: Locator): Promise<string> => ((await locator.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const chipCount = async (attribute: 'data-refused-code' | 'data-dead-code', code: string): Promise<number> =>
  Number(await textOf(page.locator(`[${attribute}="${code}"] [data-count]`)));
const deadLetterRows = (): Locator => page.locator('tr[data-dead-letter]');
const shot = (name: string): Promise<Buffer> => page.screenshot({ path: `${ARTIFACTS}/overview-${name}.png` });

describe('the /ui overview in Chromium', () => {
  it('asks for the password: the page, its JSON and the replay route are refused without it', async () => {
    for (const path of ['/ui', '/ui/overview.json', '/ui/assets/overview.js', '/ui/queues']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(401);
    }
    const stranger = await browser!.newContext({ httpCredentials: { username: 'admin', password: 'wrong' } });
    try {
      const outcome = await (await stranger.newPage()).goto(`${base}/ui`).then(
        (response) => `status ${response?.status()}`,
        (error: Error) => error.message,
      );
      expect(outcome).toMatch(/^status 401$|ERR_INVALID_AUTH_CREDENTIALS/);
    } finally {
      await stranger.close();
    }
  });

  it('shows what was dropped: 6 sent, 4 refused by code, 3 dead letters by API code, nothing waiting', async () => {
    const response = await page.goto(`${base}/ui`);
    expect(response?.status()).toBe(200);
    await page.locator('#chart canvas').waitFor();
    // Nothing waits, but 3 dead letters wait for a person: not a green "nothing waiting" (issue 45).
    expect(await textOf(figure('state'))).toMatch(/^Nothing to send; 3 dead letters wait for a person/);
    expect(await page.locator('[data-state]').getAttribute('data-state')).toBe('attention');
    expect(await textOf(figure('sent-hour'))).toBe('6');
    expect(await textOf(figure('refused-total'))).toBe('4');
    expect(await chipCount('data-refused-code', 'LABEL_ENCRYPTED')).toBe(2);
    expect(await chipCount('data-refused-code', 'LABEL_TRUNCATED')).toBe(1);
    expect(await chipCount('data-refused-code', 'CTE_FIELD_MISSING')).toBe(1);
    const refusedFiles = await page.locator('[data-part="refusals"] td.file').allTextContents();
    expect(refusedFiles.sort()).toEqual(['CUT-0001.pdf', 'ENC-0001.pdf', 'ENC-0002.pdf', 'NODEST-0001.xml']);
    expect(await textOf(figure('dead-letters-total'))).toBe('3');
    expect(await chipCount('data-dead-code', 'DELIVERY_NOT_FOUND')).toBe(2);
    expect(await chipCount('data-dead-code', 'DELIVERY_NOT_ELIGIBLE')).toBe(1);
    expect(await deadLetterRows().count()).toBe(3);
    expect(await textOf(figure('failed-label'))).toBe('3');
    for (const kind of ITEM_KINDS) {
      expect(await textOf(figure(`queued-${kind}`))).toBe('0');
      expect(await textOf(figure(`inbox-${kind}`))).toBe('0');
    }
    expect(await textOf(figure('spool-holder'))).toBe(`${hostname()} pid ${process.pid}`);
    await shot('after-drop');
    await page.screenshot({ path: `${ARTIFACTS}/overview-after-drop-full.png`, fullPage: true });
  });

  it('agrees with the JSON and draws the last hour: requests under the limit, dead letters in this minute', async () => {
    const data = (await page.evaluate(async () => (await fetch('/ui/overview.json')).json())) as {
      ratePerMinute: number;
      details: { activity: { requests: number[]; sent: number[]; deadLettered: number[]; refused: number[] } };
    };
    const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
    expect(data.details.activity.requests).toHaveLength(60);
    expect(sum(data.details.activity.sent)).toBe(6);
    expect(sum(data.details.activity.deadLettered)).toBe(3);
    expect(sum(data.details.activity.refused)).toBe(4);
    // 6 accepted, 2 unknown deliveries tried twice (notFoundAttempts), 1 cancelled once.
    expect(sum(data.details.activity.requests)).toBe(11);
    expect(data.ratePerMinute).toBe(t.config.delivery.ratePerMinute);
  });

  it('replays one dead letter from the page: once its delivery exists it is sent and leaves the list', async () => {
    const [target] = unknown;
    t.sandbox.state.addDelivery({ id: target });
    const row = page.locator('tr[data-dead-letter]').filter({ hasText: `${target}.pdf` });
    await expect(row.count()).resolves.toBe(1);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/ui/dead-letters/replay')),
      row.locator('button[data-replay-id]').click(),
    ]);
    expect(response.status()).toBe(200);
    await page.locator('#toast').filter({ hasText: 'Replayed 1 dead letter' }).waitFor();
    await waitFor(async () => (await deadLetterRows().count()) === 2 && (await textOf(figure('sent-hour'))) === '7', {
      what: 'the replayed letter gone from the page, 7 sent',
    });
    expect(await row.count()).toBe(0);
    expect(await textOf(figure('dead-letters-total'))).toBe('2');
    expect(await chipCount('data-dead-code', 'DELIVERY_NOT_FOUND')).toBe(1);
    expect(t.sandbox.state.deliveries.get(target!)?.label).not.toBeNull();
    await waitFor(async () => (await filesUnder(join(t.spool, 'archive'))).includes(`${target}.pdf`), { what: 'the replayed file archived' });
    await shot('after-replay');
  });

  it('refuses a replay without the page header or from another origin', async () => {
    const [letter] = await queues.items.label.getFailed(0, 0);
    const auth = { authorization: `Basic ${Buffer.from(`admin:${UI_PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ id: String(letter!.id) });
    expect((await fetch(`${base}/ui/dead-letters/replay`, { method: 'POST', headers: auth, body })).status).toBe(403);
    const foreign = await fetch(`${base}/ui/dead-letters/replay`, {
      method: 'POST',
      headers: { ...auth, 'x-carrier-sync-ui': 'replay', origin: 'http://evil.example' },
      body,
    });
    expect(foreign.status).toBe(403);
    expect(await queues.items.label.getJobState(String(letter!.id))).toBe('failed');
  });

  it('says which process holds the spool lease, and the version it and this process run (footer)', async () => {
    // The daemon runs in this test process, and its watcher holds the lease.
    await waitFor(async () => (await textOf(figure('spool-holder'))) === `${hostname()} pid ${process.pid}`, { what: 'the spool holder on the page' });
    expect(await textOf(figure('spool-holder-version'))).toBe(PACKAGE_VERSION);
    expect(await textOf(page.locator('footer'))).toBe(`carrier-sync ${PACKAGE_VERSION} on Node.js ${process.version} (this process)`);
  });

  it('shows a 401 pause with its reason and since when, then working again once cleared', async () => {
    const keys = createKeys(t.prefix);
    const gate = createAuthGate(
      redis,
      keys,
      ITEM_KINDS.map((kind) => queues.items[kind]),
    );
    await gate.trip({ at: new Date().toISOString(), endpoint: 'label', message: 'API refused the key (401): Invalid API key' });
    try {
      await waitFor(async () => (await page.locator('[data-state]').getAttribute('data-state')) === 'paused', { what: 'the paused state on the page' });
      expect(await textOf(figure('state'))).toMatch(/^Paused: the API refused our key \(401\) since \d\d:\d\d:\d\d \(/);
      expect(await textOf(page.locator('[data-part="state"] .detail:not(.action)'))).toContain('Invalid API key');
      expect(await textOf(page.locator('[data-part="state"] .detail.action'))).toMatch(/^What to do: fix the key/);
      await shot('paused-401');
    } finally {
      await gate.clear();
    }
    await waitFor(async () => (await page.locator('[data-state]').getAttribute('data-state')) === 'attention', {
      what: 'working again (its dead letters still waiting)',
    });
  });

  it('links into bull-board under /ui/queues: the label queue and its failed tab, where a dead letter can be cleaned', async () => {
    await page.locator('[data-figure="failed-label"]').click();
    await page.waitForURL(/\/ui\/queues\/queue\/label\?status=failed/);
    const card = page.locator('[class*="card-"]').filter({ has: page.locator(`a[href*="label.${cancelled}"]`) });
    await card.waitFor();
    expect(await textOf(card)).toMatch(/Failed at/);
    // The dead letter's error, as the worker highlighted it (bull-board loads at this first visit).
    await waitFor(async () => /UnrecoverableError: API_REJECTED: .*DELIVERY_NOT_ELIGIBLE/.test(await textOf(card)), {
      what: "the dead letter's error on its card",
    });
    await page.screenshot({ path: `${ARTIFACTS}/bull-board-label-failed.png` });
    await card.locator('button:has(svg.lucide-trash-2)').click();
    const dialog = page.getByRole('alertdialog');
    await dialog.waitFor();
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith('/clean')),
      dialog.getByRole('button', { name: 'Confirm' }).click(),
    ]);
    expect(response.status()).toBeLessThan(300);
    await waitFor(async () => (await queues.items.label.getFailedCount()) === 1, { what: 'the cleaned dead letter gone' });
    // And back to the overview; its header links to bull-board's queue list.
    await page.goto(`${base}/ui`);
    expect(await page.locator('a[data-link="queues"]').getAttribute('href')).toBe('/ui/queues');
    await waitFor(async () => (await deadLetterRows().count()) === 1, { what: 'one dead letter left on the overview' });
    await shot('end');
  });
});
