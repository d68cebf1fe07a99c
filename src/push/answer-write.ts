/**
 * Writing a request's answer so that no failover can lose it (issue 28 item 2). The answer is one
 * write (the gate's leave, which removes the job's attempt record last). It counts as written when
 * the attempt record is gone from the primary and — with replicas — a replica has acknowledged it:
 * a write the old primary took but no replica had is lost when a replica is promoted, and the
 * job's run would then be the owner's own, with no answer recorded.
 *
 * So, under kept-answers.ts (which retries while Redis cannot take writes):
 *   first try     the leave; with replicas, then `confirmAnswer` (a few bytes and WAIT 1);
 *   later tries   `confirmAnswer` first: the record gone and a replica acknowledging → written;
 *                 the record still this attempt's → the leave never landed, or a failover lost it
 *                 (the promoted replica had the record from the enter's WAIT): the leave again;
 *                 otherwise (no replica has it yet) → kept, confirmed again later.
 * A try that failed mid-flight is never applied twice: the record tells whether the leave landed.
 */
import { AnswerUnconfirmedError } from '../gate/replica-wait.js';
import type { PushDeps } from './deps.js';

/**
 * How the answer was found written, for the `item sent` line: `replica` (a replica acknowledged
 * it), `primary` (no replicas to wait for), `late-…` (kept, then written by a later try),
 * `found-…` (a later try found the first one's leave landed: the record gone); the suffix says
 * whether a replica acknowledged it or there was none to wait for.
 */
export type AnswerWrite = 'replica' | 'primary' | 'late-replica' | 'late-primary' | 'found-replica' | 'found-primary';

export async function writeAnswer(deps: PushDeps, jobId: string, member: string, leave: () => Promise<void>): Promise<AnswerWrite> {
  let isTried = false;
  let how: AnswerWrite = 'primary';
  const ackedBy = (acks: number): 'replica' | 'primary' => (acks === Infinity ? 'primary' : 'replica');
  await deps.kept.write({ jobId, member }, async () => {
    if (isTried) {
      const state = await deps.gate.confirm(jobId, member);
      if (!state.isPending) {
        if (state.acks >= 1) {
          how = `found-${ackedBy(state.acks)}`;
          return;
        }
        throw new AnswerUnconfirmedError(`the answer of job ${jobId} is on the primary, not yet on a replica`);
      }
    }
    const isLate = isTried;
    isTried = true;
    await leave();
    if (!deps.gate.hasReplicas()) {
      how = isLate ? 'late-primary' : 'primary';
      return;
    }
    const after = await deps.gate.confirm(jobId, member);
    if (after.acks < 1) throw new AnswerUnconfirmedError(`the answer of job ${jobId} is on the primary, not yet on a replica`);
    how = isLate ? `late-${ackedBy(after.acks)}` : ackedBy(after.acks);
  });
  return how;
}

/** What kept-answers.ts keeps and retries: Redis unavailable, or an answer not yet on a replica. */
export function isAnswerUnavailable(isRedisUnavailable: (error: unknown) => boolean): (error: unknown) => boolean {
  return (error) => isRedisUnavailable(error) || error instanceof AnswerUnconfirmedError;
}
