import { expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createKeptAnswers } from '../../src/push/kept-answers.js';
import { isRedisUnavailable } from '../../src/store/redis-health.js';

const oom = (): Error => Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: 'ReplyError' });
const logger = createLogger({ level: 'silent' });

it('an answer Redis refuses is kept and written once it takes writes; a second run of the job waits for it', async () => {
  let late = 0;
  const kept = createKeptAnswers(isRedisUnavailable, logger, () => (late += 1));
  let tries = 0;
  let isFull = true;
  const written = kept.write({ jobId: 'j1', member: 'j1:abc' }, async () => {
    tries += 1;
    if (isFull) throw oom();
  });
  // Held while Redis refuses: a run of the same job waits on it.
  expect(kept.held()).toEqual([{ jobId: 'j1', member: 'j1:abc' }]);
  let isSettled = false;
  const settled = kept.settled('j1').then(() => (isSettled = true));
  isFull = false;
  kept.wake();
  await written;
  await settled;
  expect(isSettled).toBe(true);
  expect(tries).toBeGreaterThanOrEqual(2);
  expect(kept.held()).toEqual([]);
  expect(kept.recordedLate()).toBe(1);
  expect(late).toBe(1);
});

it('an error that is not about Redis being unavailable is not kept: it reaches the caller', async () => {
  const kept = createKeptAnswers(isRedisUnavailable, logger);
  await expect(kept.write({ jobId: 'j2', member: 'j2:abc' }, () => Promise.reject(new Error('ERR Error running script: bad argument')))).rejects.toThrow(
    /bad argument/,
  );
  expect(kept.held()).toEqual([]);
});

it('closing gives kept answers up (their jobs are taken up again elsewhere)', async () => {
  const kept = createKeptAnswers(isRedisUnavailable, logger);
  const written = kept.write({ jobId: 'j3', member: 'j3:abc' }, () => Promise.reject(oom()));
  kept.close();
  await expect(written).rejects.toThrow(/not written/);
});
