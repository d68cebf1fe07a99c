/**
 * Vitest global setup: every test talks to a real Redis. CARRIER_SYNC_TEST_REDIS_URL wins when set;
 * otherwise a private redis-server is started on a free loopback port with nothing on disk, and
 * stopped after. REDIS_URL is never read here: an operator's shell with a production REDIS_URL
 * exported must not aim the tests (which flush their prefixes) at it.
 */
import { spawn } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { freePort, waitForRedisReady } from './redis-process.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnv = process.env['CARRIER_SYNC_TEST_REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    project.provide('redisUrl', fromEnv);
    return async () => {};
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await waitForRedisReady(child);
  project.provide('redisUrl', `redis://127.0.0.1:${port}`);
  return async () => {
    child.kill('SIGTERM');
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  };
}
