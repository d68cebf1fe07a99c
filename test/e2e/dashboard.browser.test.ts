/**
 * The bull-board dashboard in a real headless Chromium (Debian's /usr/bin/chromium; CI installs
 * it, and a machine without it fails here with a message, rather than skipping): behind basic
 * auth, it shows the item queues with their counts, and retry / clean on a dead-lettered job (a
 * job in a queue's failed set) act on BullMQ. Screenshots go to test-artifacts/.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { UnrecoverableError, Worker } from 'bullmq';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { DeliveryConfig } from '../../src/config/schema.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createReadiness } from '../../src/ops/readiness.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import { createAuthGate } from '../../src/queue/auth-gate.js';
import { createDedupMemory } from '../../src/queue/dedup.js';
import { createKeys, ITEM_KINDS, type ItemKind } from '../../src/queue/keys.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/queue/redis.js';
import { createStats } from '../../src/queue/stats.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = 'test-artifacts';
const UI_PASSWORD = 'dashboard-pass-3';
const TO_RETRY = 'label.DL-RETRY.aaa111';
const TO_CLEAN = 'label.DL-CLEAN.bbb222';
const DELIVERY: DeliveryConfig = {
  ratePerMinute: 300,
  rateWindowMarginMs: 1000,
  maxAttempts: 3,
  backoffMs: 1000,
  notFoundAttempts: 2,
  maxQueued: 5000,
  concurrency: 1,
  maxRateLimitedMs: 60_000,
  completedRetentionSec: 3600,
  lockMs: 30_000,
  authProbeMs: 10_000,
};

const prefix = uniquePrefix('ui');
const redis = connectRedis(testRedisUrl(), 'dashboard-test');
const keys = createKeys(prefix);
let queues: QueueSet;
let server: OpsServer;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install -y chromium); CI installs it`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  queues = openQueues(redis, prefix, DELIVERY);
  const stats = createStats(redis, keys.stats);
  const authGate = createAuthGate(redis, keys, ITEM_KINDS.map((kind) => queues.items[kind]));
  server = await startOpsServer({
    host: '127.0.0.1',
    port: 0,
    uiPassword: UI_PASSWORD,
    ingestToken: null,
    maxIngestBytes: 65_536,
    metrics: createMetrics(),
    queues: queues.items,
    enqueueDeps: { redis, keys, queues, dedup: createDedupMemory(redis, keys, 30), stats, clock: systemClock, retentionSec: 3600 },
    readiness: createReadiness({ redis, authGate, isDraining: () => false }),
    logger: silentLogger,
  });

  // Two dead-lettered labels: a worker whose push is refused for good (as push/ does for API_REJECTED).
  for (const jobId of [TO_RETRY, TO_CLEAN]) {
    await queues.items.label.add('label', { kind: 'label', deliveryId: jobId.split('.')[1] } as never, { jobId });
  }
  const worker = new Worker(
    queues.items.label.name,
    async () => {
      throw new UnrecoverableError('API_REJECTED: Invalid PDF (UNAUTHORIZED, 400)');
    },
    { connection: redis, prefix },
  );
  try {
    for (const jobId of [TO_RETRY, TO_CLEAN]) {
      await waitFor(async () => (await queues.items.label.getJobState(jobId)) === 'failed', { what: `${jobId} dead-lettered` });
    }
  } finally {
    await worker.close();
  }
  // A waiting CT-e, and a collecting event that came in through POST /events.
  await queues.items.cte.add('cte', { kind: 'cte', deliveryId: 'CTE-1' } as never, { jobId: 'cte.CTE-1.ccc333' });
  const ingest = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ delivery_id: 'EV-1', event_at: '2026-01-01T10:00:00Z' }),
  });
  expect(ingest.status).toBe(202);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
  context = await browser.newContext({ httpCredentials: { username: 'admin', password: UI_PASSWORD }, viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await queues?.close();
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

const queueCard = (kind: ItemKind): Locator => page.locator('[class*="queueCard"]').filter({ has: page.locator(`a[title="${kind}"]`) });
const jobCard = (jobId: string): Locator => page.locator('[class*="card-"]').filter({ has: page.locator(`a[href*="${jobId}"]`) });
const textOf = async (locator: Locator): Promise<string> => ((await locator.textContent()) ?? '').replace(/\s+/g, ' ');

/** Clicks one of a job card's icon buttons, confirms the dialog, and waits for the API's answer. */
async function actOnJob(jobId: string, icon: string, route: 'retry' | 'clean'): Promise<number> {
  await jobCard(jobId).locator(`button:has(svg.${icon})`).click();
  const dialog = page.getByRole('alertdialog');
  await dialog.waitFor();
  await page.screenshot({ path: `${ARTIFACTS}/dashboard-${route}-confirm.png` });
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/${encodeURIComponent(jobId)}/${route}`)),
    dialog.getByRole('button', { name: 'Confirm' }).click(),
  ]);
  await dialog.waitFor({ state: 'hidden' });
  return response.status();
}

describe('the /ui dashboard in Chromium', () => {
  it('asks for the password: the browser is refused without it or with a wrong one', async () => {
    // Without credentials Playwright's Chromium cancels the navigation (ERR_INVALID_AUTH_CREDENTIALS)
    // instead of showing a login prompt; with wrong ones it ends on the 401 page.
    for (const options of [{}, { httpCredentials: { username: 'admin', password: 'wrong' } }]) {
      const stranger = await browser!.newContext(options);
      try {
        const outcome = await (await stranger.newPage()).goto(`${server.url}/ui`).then(
          (response) => `status ${response?.status()}`,
          (error: Error) => error.message,
        );
        expect(outcome).toMatch(/^status 401$|ERR_INVALID_AUTH_CREDENTIALS/);
      } finally {
        await stranger.close();
      }
    }
  });

  it('shows the three item queues with their counts, the dead-lettered labels as failed', async () => {
    const response = await page.goto(`${server.url}/ui`);
    expect(response?.status()).toBe(200);
    await waitFor(async () => /2 Jobs/.test(await textOf(queueCard('label'))), { what: 'label card with 2 jobs' });
    expect(await textOf(queueCard('label'))).toMatch(/failed\s*2/i);
    await waitFor(async () => /1 Job\b/.test(await textOf(queueCard('cte'))), { what: 'cte card with 1 job' });
    await waitFor(async () => /1 Job\b/.test(await textOf(queueCard('collecting'))), { what: 'collecting card with 1 job' });
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-overview.png`, fullPage: true });
  });

  it('retries a dead-lettered job from the label queue failed tab: it leaves the failed set', async () => {
    await page.locator('nav a[title="label"]').click();
    await page.waitForURL(/\/ui\/queue\/label/);
    await page.locator('a[href$="status=failed"]').first().click();
    await page.waitForURL(/status=failed/);
    await jobCard(TO_RETRY).waitFor();
    expect(await textOf(jobCard(TO_RETRY))).toContain('API_REJECTED');
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-label-failed.png`, fullPage: true });

    expect(await actOnJob(TO_RETRY, 'lucide-refresh-cw', 'retry')).toBeLessThan(300);
    const state = await waitFor(
      async () => {
        const now = await queues.items.label.getJobState(TO_RETRY);
        return now !== 'failed' ? now : null;
      },
      { what: `${TO_RETRY} out of the failed set` },
    );
    expect(['waiting', 'prioritized', 'active']).toContain(state);
    await jobCard(TO_RETRY).waitFor({ state: 'detached' });
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-after-retry.png`, fullPage: true });
  });

  it('cleans a dead-lettered job from the failed tab: it is removed from Redis', async () => {
    await jobCard(TO_CLEAN).waitFor();
    expect(await actOnJob(TO_CLEAN, 'lucide-trash-2', 'clean')).toBeLessThan(300);
    await waitFor(async () => (await queues.items.label.getJobState(TO_CLEAN)) === 'unknown', { what: `${TO_CLEAN} removed` });
    expect(await queues.items.label.getFailedCount()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-after-clean.png`, fullPage: true });
  });
});
