/**
 * The overview and a history page as a warehouse in Brazil sees them, in a real headless Chromium
 * (see dashboard.browser.test.ts): a browser asking for pt-BR in São Paulo's time zone, against a
 * daemon left at the default language. No English UI text is left on either page (every `ui.*`
 * message of the English catalog is looked for), reasons are Portuguese, and times are the
 * browser's local time with the UTC time on hover. The overview's headline says what a person must
 * do, in Portuguese, in the two states that need one: dead letters waiting and a 401 pause (a real
 * one: a second daemon with a key the sandbox does not know); a browser asking for English reads
 * the same in English. Screenshots: test-artifacts/pt-br-overview.png, pt-br-history.png, and
 * {pt-br,en}-overview-{dead-letters,401}.png.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
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
/** The same browser asking for English, for the English counterparts of the headlines. */
let englishPage: Page;
/** A second daemon whose key the sandbox refuses (401): started by the test of the pause. */
let refused: TestDaemon | undefined;
const ids = { good: '', refused: 'CUT-0042' };

/** The overview's headline and its details, as one line of text. */
const headlineOf = async (at: Page): Promise<string> => ((await at.locator('[data-part="state"]').textContent()) ?? '').replace(/\s+/g, ' ').trim();
const stateOf = (at: Page): Promise<string | null> => at.locator('[data-state]').getAttribute('data-state');
const figureOf = (at: Page, name: string): Locator => at.locator(`[data-figure="${name}"]`);

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
  const english = await browser.newContext({
    locale: 'en-US',
    timezoneId: TIME_ZONE,
    extraHTTPHeaders: { 'accept-language': 'en-US,en;q=0.9' },
    viewport: { width: 1280, height: 800 },
  });
  englishPage = await english.newPage();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await refused?.stop();
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

  it('with a dead letter and nothing to send, the headline says a person is needed, in Portuguese; in English for an English browser', async () => {
    const unknownDelivery = randomUUID();
    await writeFile(join(t.spool, 'labels', `${unknownDelivery}.pdf`), await makePdf('for a delivery the API does not know'));
    await page.goto(`${base}/ui`);
    await waitFor(async () => (await stateOf(page)) === 'attention' && (await figureOf(page, 'dead-letters-total').innerText()) === '1', {
      what: 'the dead letter on the page, nothing else waiting',
      timeoutMs: 30_000,
    });
    const headline = await headlineOf(page);
    expect(headline).toMatch(/^Nada para enviar; 1 falha definitiva aguarda uma pessoa: veja a lista abaixo/);
    expect(englishWordsIn(headline), headline).toEqual([]);
    expect(ENGLISH_UI.filter((phrase) => hasWord(headline, phrase))).toEqual([]);
    // The row's reason: our words, then the API's own (its code and status are in the row's code column).
    const reason = page.locator(`[data-dead-reason] td.reason`);
    expect(await reason.innerText()).toMatch(/^a API não conhece a entrega: /);
    expect(await page.locator('tr[data-dead-letter] td.code').innerText()).toBe('DELIVERY_NOT_FOUND HTTP 404');
    await page.screenshot({ path: join(ARTIFACTS, 'pt-br-overview-dead-letters.png'), fullPage: true });

    await englishPage.goto(`${base}/ui`);
    expect(await stateOf(englishPage)).toBe('attention');
    expect(await headlineOf(englishPage)).toMatch(/^Nothing to send; 1 dead letter waits for a person/);
    await englishPage.screenshot({ path: join(ARTIFACTS, 'en-overview-dead-letters.png'), fullPage: true });
  });

  it('paused on a real 401, the headline says what to do, in Portuguese; in English for an English browser', { timeout: 90_000 }, async () => {
    refused = await startTestDaemon({ roles: ['watcher', 'worker', 'http'], env: { CARRIER_SYNC_CARRIER_KEY: 'a-key-the-sandbox-does-not-know' } });
    const refusedBase = refused.daemon.opsUrl()!;
    const delivery = refused.sandbox.state.addDelivery().id;
    await writeFile(join(refused.spool, 'labels', `${delivery}.pdf`), await makePdf('sent with a refused key'));
    await page.goto(`${refusedBase}/ui`);
    await waitFor(async () => (await stateOf(page)) === 'paused', { what: 'the 401 pause on the page', timeoutMs: 30_000 });
    expect(refused.sandbox.requests().some((request) => request.status === 401)).toBe(true);
    const headline = await headlineOf(page);
    expect(headline).toMatch(/^Pausado: a API recusou a nossa chave de API \(401\) desde \d\d:\d\d:\d\d/);
    expect(headline).toContain('O que fazer: corrija a chave (CARRIER_SYNC_CARRIER_KEY');
    expect(headline).toContain('o envio retoma sozinho quando a API aceitá-la');
    expect(headline).toMatch(/a API respondeu HTTP 401 ao envio de etiqueta/);
    expect(headline).not.toMatch(/\blabel: /);
    // The API's own words stand in “quotes”, which the check leaves out; everything else is Portuguese.
    expect(englishWordsIn(headline), headline).toEqual([]);
    expect(ENGLISH_UI.filter((phrase) => hasWord(headline, phrase))).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'pt-br-overview-401.png'), fullPage: true });

    await englishPage.goto(`${refusedBase}/ui`);
    expect(await stateOf(englishPage)).toBe('paused');
    const english = await headlineOf(englishPage);
    expect(english).toMatch(/^Paused: the API refused our key \(401\) since \d\d:\d\d:\d\d/);
    expect(english).toContain('What to do: fix the key');
    await englishPage.screenshot({ path: join(ARTIFACTS, 'en-overview-401.png'), fullPage: true });
  });

  it('a browser that asks for English gets English from the same daemon', async () => {
    const response = await fetch(`${base}/ui/history/${ids.refused}`, { headers: { 'accept-language': 'en-US,en;q=0.9' } });
    const html = await response.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('refused locally: LABEL_TRUNCATED: the file has no %%EOF marker');
  });
});
