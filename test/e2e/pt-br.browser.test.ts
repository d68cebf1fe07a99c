/**
 * The overview and a history page as a warehouse in Brazil sees them, in a real headless Chromium
 * (see dashboard.browser.test.ts): a browser asking for pt-BR in São Paulo's time zone, against a
 * daemon left at the default language. No English UI text is left on either page (every `ui.*`
 * message of the English catalog is looked for), reasons are Portuguese, and times are the
 * browser's local time with the UTC time on hover. Screenshots: test-artifacts/pt-br-overview.png
 * and pt-br-history.png.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EN } from '../../src/i18n/catalog-en.js';
import { PT_BR } from '../../src/i18n/catalog-pt-br.js';
import { makePdf } from '../support/builders.js';
import { startTestDaemon, type TestDaemon } from '../support/daemon.js';
import { listFiles } from '../support/e2e-env.js';
import { englishWordsIn } from '../support/english-words.js';
import { waitFor } from '../support/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = 'test-artifacts';
const TIME_ZONE = 'America/Sao_Paulo';

let t: TestDaemon;
let base: string;
let browser: Browser | undefined;
let page: Page;
const ids = { good: '', refused: 'CUT-0042' };

/**
 * The English words of the pages: every `ui.*` message without placeholders that Portuguese says
 * differently, and the literal parts (4 letters or more) of those with placeholders; names that
 * the Portuguese message keeps as they are (carrier-sync, spool) are not counted.
 */
const ENGLISH_UI = [
  ...new Set(
    Object.entries(EN)
      .filter(([key, text]) => key.startsWith('ui.') && PT_BR[key as keyof typeof EN] !== text)
      .flatMap(([key, text]) =>
        text
          .split(/\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}/)
          .map((part) => part.replace(/^[\s:;,.()/]+|[\s:;,.()/]+$/g, ''))
          // Names the Portuguese message keeps too (carrier-sync, spool, a README section) are not English words.
          .filter((part) => /[a-z]{4}/i.test(part) && !PT_BR[key as keyof typeof EN].includes(part)),
      ),
  ),
];

/** Is `phrase` in the page's text as words of its own? Spool paths (failed/labels/…) are names, not words, and are left out. */
function hasWord(pageText: string, phrase: string): boolean {
  const text = pageText.replace(/[\w.~-]+\/[\w./~-]*/g, ' ');
  return new RegExp(`(^|[^\\p{L}])${phrase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\p{L}])`, 'u').test(text);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install -y chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startTestDaemon({ roles: ['watcher', 'worker', 'http'] });
  base = t.daemon.opsUrl()!;
  ids.good = t.sandbox.state.addDelivery().id;
  const labels = join(t.spool, 'labels');
  await writeFile(join(labels, `${ids.good}.pdf`), await makePdf('good'));
  await writeFile(join(labels, `${ids.refused}.pdf`), await readFile('test/fixtures/labels/bad-no-eof.pdf'));
  await waitFor(async () => (await listFiles(join(t.spool, 'archive'))).length === 1 && (await listFiles(join(t.spool, 'failed'))).length === 2, {
    what: 'one label archived, one refused with its report',
    timeoutMs: 30_000,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const context = await browser.newContext({
    locale: 'pt-BR',
    timezoneId: TIME_ZONE,
    extraHTTPHeaders: { 'accept-language': 'pt-BR,pt;q=0.9,en;q=0.5' },
    viewport: { width: 1280, height: 800 },
  });
  page = await context.newPage();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

describe('the pages in pt-BR', () => {
  it('the list of English UI words is long enough to mean something', () => {
    expect(ENGLISH_UI.length).toBeGreaterThan(80);
    expect(ENGLISH_UI).toEqual(expect.arrayContaining(['Refused locally', 'Dead letters', 'no file refused', 'Requests this minute']));
  });

  it('the overview has no English UI text left, its reasons are Portuguese and its times local (UTC on hover)', async () => {
    await page.goto(`${base}/ui`);
    await expect.poll(async () => page.locator('[data-part="refusals"] td.reason').allInnerTexts()).toHaveLength(1);
    expect(await page.locator('html').getAttribute('lang')).toBe('pt-BR');
    const text = await page.locator('body').innerText();
    expect(ENGLISH_UI.filter((phrase) => hasWord(text, phrase))).toEqual([]);
    expect(text).toContain('Recusados localmente');
    expect(await page.locator('[data-part="refusals"] td.reason').innerText()).toMatch(/^o arquivo não tem o marcador %%EOF: está cortado/);
    expect(await page.getByRole('searchbox').getAttribute('placeholder')).toBe('id da entrega ou nome do arquivo');

    const time = page.locator('[data-part="refusals"] td.when time');
    const iso = (await time.getAttribute('datetime')) ?? '';
    const local = new Intl.DateTimeFormat('pt-BR', { timeZone: TIME_ZONE, hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(
      new Date(iso),
    );
    expect(await time.innerText()).toContain(local);
    expect(await time.getAttribute('title')).toBe(`${new Date(iso).toISOString()} (UTC)`);
    expect(local).not.toBe(iso.slice(11, 19)); // São Paulo is not UTC: the test can tell the two apart
    expect(await page.locator('[data-part="updated"] [data-utc-offset]').innerText()).toBe(' (UTC\u221203:00)');
    expect(englishWordsIn(text), text).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'pt-br-overview.png'), fullPage: true });
  });

  it('the parts swapped in every few seconds stay Portuguese and local', async () => {
    await page.goto(`${base}/ui`);
    const updated = page.locator('[data-part="updated"]');
    const first = await updated.innerText();
    await expect.poll(async () => updated.innerText(), { timeout: 15_000 }).not.toBe(first);
    expect(await updated.innerText()).toMatch(/^atualizado \d{2}:\d{2}:\d{2} \(UTC\u221203:00\)$/);
    expect(await page.locator('[data-part="refusals"] td.when time[data-local]').count()).toBe(1);
  });

  it('a history page has no English UI text left: step names, kinds, what happened, in Portuguese', async () => {
    await page.goto(`${base}/ui/history/${ids.refused}`);
    const rows = page.locator('tr.step');
    expect(await rows.locator('td:nth-child(4)').allInnerTexts()).toEqual(['visto', 'recusado', 'para failed/']);
    expect(await rows.nth(1).locator('td.reason').innerText()).toMatch(/^recusado localmente: LABEL_TRUNCATED: o arquivo não tem o marcador %%EOF/);
    expect(await rows.nth(2).locator('td.reason').innerText()).toBe(`arquivo movido para failed/labels/${ids.refused}.pdf`);
    const text = await page.locator('body').innerText();
    expect(ENGLISH_UI.filter((phrase) => hasWord(text, phrase))).toEqual([]);
    const time = rows.nth(0).locator('td.when time');
    const iso = (await time.getAttribute('datetime')) ?? '';
    expect(await time.innerText()).toMatch(/^\d{2}\/\d{2}\/\d{4},? \d{2}:\d{2}:\d{2},\d{3}$/);
    expect(await time.getAttribute('title')).toBe(`${iso} (UTC)`);
    // The file's mtime inside the step's text is local too, the UTC time on hover; the sha256 is cut, whole on hover.
    const seen = rows.nth(0).locator('td.reason');
    expect(await seen.locator('time').innerText()).toMatch(/^\d{2}\/\d{2}\/\d{4},? \d{2}:\d{2}:\d{2},\d{3}$/);
    expect(await seen.locator('span.long').getAttribute('title')).toMatch(/^[0-9a-f]{64}$/);
    expect(await seen.locator('span.long').innerText()).toMatch(/^[0-9a-f]{12}…$/);
    expect(englishWordsIn(text), text).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'pt-br-history.png'), fullPage: true });

    await page.goto(`${base}/ui/history/${ids.good}`);
    expect(await page.locator('tr.step td:nth-child(4)').allInnerTexts()).toEqual([
      'visto',
      'reservado',
      'válido',
      'na fila',
      'tentativa',
      'aceito',
      'arquivado',
    ]);
    const good = await page.locator('body').innerText();
    expect(ENGLISH_UI.filter((phrase) => hasWord(good, phrase))).toEqual([]);
    expect(englishWordsIn(good), good).toEqual([]);
  });

  it('a browser that asks for English gets English from the same daemon', async () => {
    const response = await fetch(`${base}/ui/history/${ids.refused}`, { headers: { 'accept-language': 'en-US,en;q=0.9' } });
    const html = await response.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('refused locally: LABEL_TRUNCATED: the file has no %%EOF marker');
  });
});
