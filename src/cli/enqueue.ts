import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';
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
      if (!verdict.ok) throw new UsageError(verdict.error.message);
      const job = collectingJobOf(verdict.value, `cli:${randomUUID()}`, { source: 'cli' }, new Date().toISOString());
      const result = await withContext(command, (ctx) => enqueueEvents(ctx.enqueueDeps, [job]));
      if (result.duplicates.length > 0)
        print(`duplicate: an event at ${verdict.value.instantKey} was already taken for delivery ${options.deliveryId}; not sent again`);
      else print(`queued ${result.jobIds[0] ?? ''}${verdict.value.epochMs > Date.now() ? ` (held until ${verdict.value.instantKey})` : ''}`);
    });
}
