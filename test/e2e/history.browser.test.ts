/**
 * The journey on the overview, in a real headless Chromium (see dashboard.browser.test.ts): a
 * delivery searched from the overview's search box opens its timeline (screenshot in
 * test-artifacts/history-timeline.png); a dead letter's row and a refused file's row link to their
 * journeys; the JSON beside the page answers only with the UI's credentials.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JourneyStep } from '../../src/journey/journey-read.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { listFiles } from '../support/e2e-env.js';
import { waitFor } from '../support/wait.js';
import { compactJourneys } from '../../src/journey/journey-compact.js';
import { deadLetterDeliveries } from '../../src/queue/dead-letter.js';
import { DAY_MS } from '../../src/journey/journey.js';
import { createLogger } from '../../src/log.js';
import { openContext } from '../../src/runtime/context.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = 'test-artifacts';
const UI_PASSWORD = 'history-pass-7';

let t: TestDaemon;
let base: string;
let browser: Browser | undefined;
let page: Page;
const ids = { good: '', dead: randomUUID(), refused: 'CUT-0042' };

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install -y chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestDaemon({ roles: ['watcher', 'worker', 'http'], env: { CARRIER_SYNC_UI_PASSWORD: UI_PASSWORD } });
  base = t.daemon.opsUrl()!;
  ids.good = t.sandbox.state.addDelivery().id;
  const labels = join(t.spool, 'labels');
  // The good label's first attempt is answered 503, so its timeline shows a retry.
  t.sandbox.setFaults({ errorRate: 1 });
  await writeFile(join(labels, `${ids.good}__ORD-1.pdf`), await makePdf('good'));
  await waitFor(() => t.sandbox.requests().some((r) => r.endpoint === 'label' && r.status === 503), { what: 'the first attempt answered 503' });
  t.sandbox.setFaults({ errorRate: 0 });
  await writeFile(join(labels, `${ids.dead}.pdf`), await makePdf('unknown delivery'));
  await writeFile(join(labels, `${ids.refused}.pdf`), await readFile('test/fixtures/labels/bad-no-eof.pdf'));
  await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1 && (await listFiles(join(t.spool, 'failed'))).length === 4, {
    what: 'one label archived, a dead letter and a refused file in failed/',
    timeoutMs: 30_000,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const context = await browser.newContext({ httpCredentials: { username: 'admin', password: UI_PASSWORD }, viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

describe('the journey on the overview', () => {
  it('opens a delivery searched from the overview as its timeline', async () => {
    await page.goto(`${base}/ui`);
    await page.getByRole('searchbox', { name: 'delivery id or file name' }).fill(ids.good);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForURL(`**/ui/history/${ids.good}`);
    const rows = page.locator('tr.step');
    await expect
      .poll(async () => rows.locator('td:nth-child(4)').allInnerTexts())
      .toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'attempt', 'accepted', 'archived']);
    expect(await rows.nth(4).locator('td.reason').innerText()).toMatch(/^attempt 1 by \S+ pid \d+: HTTP 503/);
    expect(await rows.nth(5).locator('td.reason').innerText()).toMatch(/^attempt 2 by \S+ pid \d+: HTTP 200/);
    await page.screenshot({ path: join(ARTIFACTS, 'history-timeline.png'), fullPage: true });
  });

  it("links a dead letter's row and a refused file's row to their journeys", async () => {
    await page.goto(`${base}/ui`);
    await page.locator(`tr[data-dead-letter] a[data-link="journey"]`).first().click();
    await page.waitForURL(`**/ui/history/${ids.dead}`);
    expect(await page.locator('tr.step td:nth-child(4)').allInnerTexts()).toEqual(expect.arrayContaining(['attempt', 'dead-lettered', 'failed']));

    await page.goto(`${base}/ui`);
    await page.locator('[data-part="refusals"] a[data-link="journey"]', { hasText: `${ids.refused}.pdf` }).click();
    await page.waitForURL(/\/ui\/history\?q=/);
    expect(await page.locator('tr.step td:nth-child(4)').allInnerTexts()).toEqual(['seen', 'refused', 'failed']);
    await page.screenshot({ path: join(ARTIFACTS, 'history-file-search.png'), fullPage: true });
  });

  it("records a replay from the overview's button in the dead letter's journey", async () => {
    await page.goto(`${base}/ui`);
    await page.locator(`tr[data-dead-letter] button[data-replay-id]`).first().click();
    await page.goto(`${base}/ui/history/${ids.dead}`);
    await expect
      .poll(async () => page.reload().then(async () => page.locator('tr.step td:nth-child(4)').allInnerTexts()), { timeout: 15_000 })
      .toContain('replayed');
    expect(await page.locator('tr.step[data-step="replayed"] td.reason').innerText()).toBe('replayed from the overview');
  });

  it("opens with each item's state; a dead letter's replay button there puts it back to work", async () => {
    await page.goto(`${base}/ui/history/${ids.good}`);
    expect(
      await page.locator('[data-part="current"] tr[data-item-state]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-item-state'))),
    ).toEqual(['accepted']);
    // The overview's replay (the test before) sends it again; the delivery still unknown, it is dead-lettered again.
    await page.goto(`${base}/ui/history/${ids.dead}`);
    const dead = page.locator('[data-part="current"] tr[data-item-state="dead-lettered"]');
    await expect.poll(async () => page.reload().then(async () => dead.locator('button[data-replay-id]').count()), { timeout: 20_000 }).toBe(1);
    expect(await dead.locator('td.file').innerText()).toBe(`${ids.dead}.pdf`);
    await page.screenshot({ path: join(ARTIFACTS, 'history-current-dead-letter.png'), fullPage: true });
    // The delivery comes to exist, so the replay is accepted this time.
    t.sandbox.state.addDelivery({ id: ids.dead });
    await dead.locator('button[data-replay-id]').click();
    await expect
      .poll(async () => page.reload().then(async () => page.locator('[data-part="current"] tr[data-item-state]').getAttribute('data-item-state')), {
        timeout: 15_000,
      })
      .toBe('accepted');
    // Two replays now, both from the pages: the overview's and this one.
    expect(await page.locator('tr.step[data-step="replayed"] td.reason').allInnerTexts()).toEqual(['replayed from the overview', 'replayed from the overview']);
  });

  it('serves the same steps as JSON beside the page, behind the UI password', async () => {
    const url = `${base}/ui/history/${ids.good}.json`;
    expect((await fetch(url)).status).toBe(401);
    const response = await fetch(url, { headers: { authorization: `Basic ${Buffer.from(`admin:${UI_PASSWORD}`).toString('base64')}` } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { deliveryId: string; steps: JourneyStep[] };
    expect(body.deliveryId).toBe(ids.good);
    expect(body.steps.map((s) => s.step)).toEqual(['seen', 'claimed', 'valid', 'queued', 'attempt', 'attempt', 'accepted', 'archived']);
    expect(JSON.stringify(body)).not.toContain(Object.values(t.sandbox.keys.carriers)[0]);
  });

  it("keeps a settled delivery's journey once folded, saying which steps' detail is gone (en, pt-BR)", async () => {
    // The hourly fold as it runs two days later (history.detailDays 1): the good label settled.
    const ctx = await openContext(t.config, createLogger({ level: 'silent' }), 'test');
    try {
      const folded = await compactJourneys(ctx.redis, ctx.keys, {
        retentionDays: 30,
        detailDays: 1,
        nowMs: Date.now() + 2 * DAY_MS,
        deadLetterDeliveries: () => deadLetterDeliveries(ctx.queues),
      });
      expect(folded.folded).toBeGreaterThanOrEqual(1);
    } finally {
      await ctx.closers.closeAll();
    }
    await page.goto(`${base}/ui/history/${ids.good}`);
    const rows = page.locator('tr.step');
    expect(await rows.locator('td:nth-child(4)').allInnerTexts()).toEqual(['seen', 'accepted', 'archived', 'folded']);
    expect(await page.locator('tr.step[data-step="folded"] td.reason').innerText()).toBe(
      'detail folded (settled, past the detail window): claimed, valid, queued, attempts no longer kept step by step; 2 requests, last answer HTTP 200',
    );
    expect(await page.locator('tr.step[data-step="archived"] td.reason').innerText()).toContain(`${ids.good}__ORD-1.pdf`);
    expect(
      await page.locator('[data-part="current"] tr[data-item-state]').evaluateAll((found) => found.map((row) => row.getAttribute('data-item-state'))),
    ).toEqual(['accepted']);
    await page.screenshot({ path: join(ARTIFACTS, 'history-folded.png'), fullPage: true });

    const portuguese = await browser!.newContext({ httpCredentials: { username: 'admin', password: UI_PASSWORD }, locale: 'pt-BR' });
    const pt = await portuguese.newPage();
    await pt.goto(`${base}/ui/history/${ids.good}`);
    expect(await pt.locator('tr.step[data-step="folded"] td.reason').innerText()).toBe(
      'detalhe compactado (concluído, fora da janela de detalhe): reservado, verificado, na fila, tentativas não mais guardados passo a passo; 2 requisições, última resposta HTTP 200',
    );
    await portuguese.close();
  });
});
