import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';
import { describeFailure } from '../i18n/reason.js';
import { localTime } from '../i18n/local-time.js';
import { translator } from '../i18n/translate.js';
import { print, withContext } from './shared.js';

export function registerEnqueue(program: Command): void {
  const enqueue = program.command('enqueue').description('queue one item through the same path as files');
  enqueue
    .command('collecting')
    .description('one driver collecting event')
    .requiredOption('--delivery-id <id>', 'the delivery')
    .requiredOption('--event-at <iso8601>', 'when the driver set off, with an offset (Z or ±hh:mm)')
    .action(async (options: { deliveryId: string; eventAt: string }, command: Command) => {
      const [{ enqueueEvents }, { collectingJobOf }, { checkEventRecord }] = await Promise.all([
        import('../queue/enqueue.js'),
        import('../store/payloads.js'),
        import('../validate/event-record.js'),
      ]);
      const verdict = checkEventRecord({ delivery_id: options.deliveryId, event_at: options.eventAt });
      if (!verdict.ok) {
        const refusal = verdict.error;
        throw new UsageError(refusal.message, (lang) => describeFailure(lang, refusal));
      }
      const job = collectingJobOf(verdict.value, `cli:${randomUUID()}`, { source: 'cli' }, new Date().toISOString());
      const { result, lang } = await withContext(command, async (ctx) => ({ result: await enqueueEvents(ctx.enqueueDeps, [job]), lang: ctx.config.lang }));
      const t = translator(lang);
      const at = localTime(verdict.value.epochMs);
      if (result.duplicates.length > 0) print(t('cli.enqueue.duplicate', { at, deliveryId: options.deliveryId }));
      else if (verdict.value.epochMs > Date.now()) print(t('cli.enqueue.queuedHeld', { jobId: result.jobIds[0] ?? '', at }));
      else print(t('cli.enqueue.queued', { jobId: result.jobIds[0] ?? '' }));
    });
}
