/**
 * A command's output arrives whole whatever stdout is: a file, or a pipe read by another program,
 * slowly or not. Each command here prints over 1 MB; the file run is the reference, and a child
 * process reading the pipe reports the byte count and hash of what it got.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryConfig } from '../../src/config/schema.js';
import { openQueues, type QueueSet } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { binArgv, binEnv, type ProcessEnv } from '../support/process.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const MIN_BYTES = 1024 * 1024;

/**
 * Reads stdin in small steps with a pause after each, so the writer is always ahead of it, then
 * prints `{ bytes, sha256 }`. The pause is the load this test applies, not a synchronisation.
 */
const SLOW_READER = `
const hash = require('node:crypto').createHash('sha256');
let bytes = 0;
process.stdin.on('data', (chunk) => {
  bytes += chunk.length;
  hash.update(chunk);
  process.stdin.pause();
  setTimeout(() => process.stdin.resume(), 3);
});
process.stdin.on('end', () => process.stdout.write(JSON.stringify({ bytes, sha256: hash.digest('hex') })));
`;
const FAST_READER = SLOW_READER.replace(/process\.stdin\.pause\(\);\n\s*setTimeout\(\(\) => process\.stdin\.resume\(\), 3\);/, '');

interface Received {
  code: number | null;
  bytes: number;
  sha256: string;
  stderr: string;
}

function baseEnv(env: ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: tmpdir(), TZ: 'UTC', LANG: 'C.UTF-8', ...binEnv() };
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

/** `carrier-sync <args> | node -e <reader>`: the reader is a separate process holding the pipe's other end. */
function throughPipe(args: readonly string[], env: ProcessEnv, reader: string): Promise<Received> {
  return new Promise((resolve, reject) => {
    const cli = spawn(process.execPath, binArgv(args), { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    const readerProcess = spawn(process.execPath, ['-e', reader], { stdio: [cli.stdout, 'pipe', 'inherit'] });
    // The reader holds its own copy of the read end; this process must not read from it too.
    cli.stdout.destroy();
    let stderr = '';
    let report = '';
    cli.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    readerProcess.stdout.setEncoding('utf8').on('data', (chunk: string) => (report += chunk));
    const cliExit = new Promise<number | null>((done) => cli.once('exit', (code) => done(code)));
    const timer = setTimeout(() => {
      cli.kill('SIGKILL');
      readerProcess.kill('SIGKILL');
      reject(new Error(`carrier-sync ${args.join(' ')} | reader did not end within 60 s\n${stderr}`));
    }, 60_000);
    cli.once('error', reject);
    readerProcess.once('error', reject);
    readerProcess.once('close', () => {
      void cliExit.then((code) => {
        clearTimeout(timer);
        try {
          const { bytes, sha256 } = JSON.parse(report) as { bytes: number; sha256: string };
          resolve({ code, bytes, sha256, stderr });
        } catch (error) {
          reject(new Error(`reader printed no report (${String(error)}): ${report}`));
        }
      });
    });
  });
}

/** `carrier-sync <args> > file`: the reference output. */
async function toFile(args: readonly string[], env: ProcessEnv, path: string): Promise<{ code: number | null; text: string }> {
  const file = await open(path, 'w');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const cli = spawn(process.execPath, binArgv(args), { env: baseEnv(env), stdio: ['ignore', file.fd, 'inherit'] });
      cli.once('error', reject);
      cli.once('close', (exitCode) => resolve(exitCode));
    });
    return { code, text: await readFile(path, 'utf8') };
  } finally {
    await file.close();
  }
}

const sha256Of = (text: string): string => createHash('sha256').update(text).digest('hex');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cs-output-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function expectWholeThroughPipes(name: string, args: readonly string[], env: ProcessEnv, expectedCode: number): Promise<unknown> {
  const reference = await toFile(args, env, join(dir, `${name}.out`));
  expect(reference.code).toBe(expectedCode);
  expect(Buffer.byteLength(reference.text)).toBeGreaterThan(MIN_BYTES);
  const parsed = JSON.parse(reference.text) as unknown;
  for (const [what, reader] of [
    ['slow', SLOW_READER],
    ['fast', FAST_READER],
  ] as const) {
    const received = await throughPipe(args, env, reader);
    expect({ what, code: received.code, bytes: received.bytes }, received.stderr).toEqual({
      what,
      code: expectedCode,
      bytes: Buffer.byteLength(reference.text),
    });
    expect(received.sha256).toBe(sha256Of(reference.text));
  }
  return parsed;
}

describe('output through a pipe is complete', () => {
  it('validate --json prints 2 MB of verdicts whole to a slow and a fast pipe reader, with exit code 1', async () => {
    const lines = Array.from({ length: 12_000 }, (_, i) => JSON.stringify({ delivery_id: `d-${i}`, event_at: `not-a-time-${i}` }));
    const file = join(dir, 'events-all-bad.ndjson');
    await writeFile(file, `${lines.join('\n')}\n`);
    const verdicts = (await expectWholeThroughPipes('validate', ['validate', '--json', file], {}, 1)) as Array<{ notes: string[] }>;
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0]?.notes).toHaveLength(12_001);
  });

  describe('dlq list --json', () => {
    const prefix = uniquePrefix('output');
    const redis = connectRedis(testRedisUrl(), 'output-test');
    let queues: QueueSet;
    const LETTERS = 500;

    beforeAll(async () => {
      queues = openQueues(redis, prefix, { maxAttempts: 1, backoffMs: 10, completedRetentionSec: 60 } as DeliveryConfig);
      const queue = queues.items.label;
      await queue.addBulk(
        Array.from({ length: LETTERS }, (_, i) => ({
          name: 'label',
          data: {
            kind: 'label' as const,
            deliveryId: `delivery-${i}`,
            externalId: null,
            pdfBase64: '',
            byteLength: 0,
            origin: { source: 'spool' as const, spoolId: 'spool-1', fileName: `label-${i}.pdf`, contentId: `c${i}` },
            receivedAt: new Date(0).toISOString(),
          },
          opts: { jobId: `label-${i}` },
        })),
      );
      // Dead-letter them all through BullMQ itself, each with a long reason (about 2 KB of JSON each).
      const workerRedis = connectRedis(testRedisUrl(), 'output-worker');
      const worker = new Worker(
        queue.name,
        async (job) => {
          throw new UnrecoverableError(`refused ${String(job.id)}: ${'x'.repeat(2000)}`);
        },
        { connection: workerRedis, prefix, concurrency: 50 },
      );
      try {
        await waitFor(async () => (await queue.getJobCounts('failed'))['failed'] === LETTERS, { timeoutMs: 30_000, what: `${LETTERS} dead letters` });
      } finally {
        await worker.close();
        await closeRedis(workerRedis);
      }
    });
    afterAll(async () => {
      await queues.close();
      await closeRedis(redis);
      await cleanupPrefix(prefix);
    });

    it('prints every dead letter whole to a slow and a fast pipe reader', async () => {
      const letters = (await expectWholeThroughPipes(
        'dlq-list',
        ['dlq', 'list', '--json'],
        { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: prefix },
        0,
      )) as Array<{ id: string }>;
      expect(letters).toHaveLength(LETTERS);
      expect(new Set(letters.map((letter) => letter.id)).size).toBe(LETTERS);
    });
  });
});
