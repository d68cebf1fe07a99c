/**
 * A journey never claims what did not happen: the built daemon is killed (kill -9) while a label's
 * request is on the wire. Its journey then shows that attempt started and "no answer recorded";
 * after a restart, the attempt that got through, the acceptance and the file's end follow it.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JourneyStep } from '../../src/journey/journey-read.js';
import { makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted, type DaemonProcess } from '../support/process.js';
import { waitFor } from '../support/wait.js';

let t: E2eEnv;
beforeAll(async () => {
  t = await createE2eEnv({ sandbox: { autoCreateDeliveries: true, faults: { latencyMs: 60_000 } } });
});
afterAll(async () => {
  await killAllDaemons();
  await t.close();
});

async function start(): Promise<DaemonProcess> {
  const daemon = spawnDaemon(t.env, { args: t.args('start') });
  await waitUntilStarted(daemon);
  return daemon;
}

async function journey(deliveryId: string): Promise<JourneyStep[]> {
  const result = await runCli(t.args('history', deliveryId, '--json'), { env: t.env });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JourneyStep);
}

describe('history under kill -9', () => {
  it('tells an attempt cut by kill -9 as "no answer recorded", then the attempt after the restart', async () => {
    const deliveryId = randomUUID();
    const first = await start();
    await dropFile(join(t.spool, 'labels'), `${deliveryId}.pdf`, await makePdf('cut mid-request'));
    // The request is on the wire (the API holds it for a minute) once its attempt step is written.
    await waitFor(async () => (await journey(deliveryId)).some((s) => s.step === 'attempt'), { what: 'the attempt started', timeoutMs: 20_000 });
    first.kill('SIGKILL');
    await first.exited;

    const cut = await journey(deliveryId);
    const attempt = cut.find((s) => s.step === 'attempt');
    expect(attempt).toMatchObject({ answer: 'none', message: 'no answer recorded', pid: first.child.pid });
    expect(cut.map((s) => s.step)).not.toContain('accepted');
    const text = await runCli(t.args('history', deliveryId), { env: t.env });
    expect(text.stdout).toMatch(/attempt 1 by \S+ pid \d+: no answer recorded/);

    t.sandbox.setFaults({ latencyMs: 0 });
    const second = await start();
    await waitFor(async () => (await listFiles(join(t.spool, 'archive', 'labels'))).length === 1, {
      what: 'the label archived after the restart',
      timeoutMs: 30_000,
    });
    await waitFor(async () => (await journey(deliveryId)).some((s) => s.step === 'archived'), { what: 'the archived step' });
    const after = await journey(deliveryId);
    const attempts = after.filter((s) => s.step === 'attempt');
    expect(attempts[0]).toMatchObject({ answer: 'none', pid: first.child.pid });
    expect(attempts.at(-1)).toMatchObject({ status: 200, pid: second.child.pid });
    // The new process may also take up the file left in flight when it takes the spool over: the
    // API holds those bytes by then, so that run ends "already accepted" without a request.
    expect(after.map((s) => s.step)).toContain('accepted');
    expect(after.at(-1)?.step).toBe('archived');
    expect(after.filter((s) => s.step === 'attempt')).toHaveLength(2);
    second.kill('SIGTERM');
    await second.exited;
  });
});
