/**
 * `carrier-sync backfill <dir> --kind …`: a one-shot enqueue of the files of a folder, in place.
 * Each file is checked like an inbox file; valid ones are queued (respecting CARRIER_SYNC_MAX_QUEUED:
 * the command waits for room), invalid ones are listed. Files are not moved: the folder is not a
 * spool inbox. A progress bar is drawn on a TTY.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ITEM_KIND_OF, type SpoolKind } from '../store/keys.js';
import { usageError } from './usage-error.js';
import { cliLogger, print, withContext } from './shared.js';

const KINDS: readonly SpoolKind[] = ['labels', 'cte', 'events'];

export function registerBackfill(program: Command): void {
  program
    .command('backfill')
    .description('one-shot enqueue of the files in a folder (checked like inbox files; not moved)')
    .argument('<dir>', 'folder holding the files')
    .requiredOption('--kind <kind>', 'labels, cte or events')
    .action(async (dir: string, options: { kind: string }, command: Command) => {
      if (!(KINDS as readonly string[]).includes(options.kind)) throw usageError('cli.usage.backfill.kind', { value: options.kind });
      const kind = options.kind as SpoolKind;
      const {
        SingleBar,
        Presets,
        enqueueDocument,
        enqueueEvents,
        backlogOf,
        prepare,
        describeFailure,
        collectingJobOf,
        newClaimId,
        isIgnoredName,
        createCheckPool,
      } = await loadBackfill();
      const names = (
        await readdir(dir).catch(() => {
          throw usageError('cli.usage.backfill.notFolder', { dir });
        })
      )
        .filter((name) => !isIgnoredName(name))
        .sort();
      const bar =
        process.stdout.isTTY === true
          ? new SingleBar({ format: 'backfill {bar} {value}/{total} files | queued {queued} | invalid {invalid}' }, Presets.shades_classic)
          : null;
      const totals = { queued: 0, invalid: 0, duplicates: 0 };
      const invalid: string[] = [];
      await withContext(command, async (ctx) => {
        const logger = cliLogger(ctx.config);
        // The same checks as the daemon's, on their threads; ended with the command's context.
        const checks = createCheckPool(ctx.config.checks, logger);
        ctx.closers.push('file checks', () => checks.close());
        const deps = { spool: ctx.config.spool, checks, clock: ctx.clock, logger, paths: { spoolId: 'backfill' } };
        bar?.start(names.length, 0, { queued: 0, invalid: 0 });
        for (const name of names) {
          const path = join(dir, name);
          const fileStat = await stat(path);
          if (!fileStat.isFile()) continue;
          while ((await backlogOf(ctx.queues.items[ITEM_KIND_OF[kind]])) >= ctx.config.delivery.maxQueued) await new Promise((r) => setTimeout(r, 500));
          const bytes = await readFile(path);
          const claimId = newClaimId(bytes);
          const prepared = await prepare(deps, kind, name, bytes, claimId, fileStat.mtimeMs, 'backfill');
          if ('error' in prepared) {
            totals.invalid += 1;
            invalid.push(`${name}: ${prepared.error.code}: ${describeFailure(ctx.config.lang, prepared.error)}`);
          } else if ('document' in prepared) {
            await enqueueDocument(ctx.enqueueDeps, prepared.document);
            totals.queued += 1;
          } else {
            const jobs = prepared.events.records.map((r) =>
              collectingJobOf(r, `backfill:${claimId}:${r.line}`, { source: 'backfill', index: r.line }, new Date().toISOString()),
            );
            const result = await enqueueEvents(ctx.enqueueDeps, jobs);
            totals.queued += result.jobIds.length;
            totals.duplicates += result.duplicates.length;
            for (const reject of prepared.events.rejects) invalid.push(`${name}:${reject.line}: ${reject.code}: ${describeFailure(ctx.config.lang, reject)}`);
            totals.invalid += prepared.events.rejects.length;
          }
          bar?.increment(1, { queued: totals.queued, invalid: totals.invalid });
        }
        bar?.stop();
      });
      for (const line of invalid) print(`INVALID ${line}`);
      print(`backfill ${kind}: ${totals.queued} queued, ${totals.duplicates} duplicates, ${totals.invalid} invalid`);
      if (totals.invalid > 0) process.exitCode = 1;
    });
}

/** What backfill runs on, loaded when it runs (not in every process of the binary). */
async function loadBackfill() {
  const [progress, enqueue, queues, claim, reason, payloads, paths, spoolName, checkPool] = await Promise.all([
    import('cli-progress'),
    import('../queue/enqueue.js'),
    import('../queue/queues.js'),
    import('../spool/claim.js'),
    import('../i18n/reason.js'),
    import('../store/payloads.js'),
    import('../spool/paths.js'),
    import('../validate/spool-name.js'),
    import('../validate/pool/check-pool.js'),
  ]);
  return {
    SingleBar: progress.SingleBar,
    Presets: progress.Presets,
    enqueueDocument: enqueue.enqueueDocument,
    enqueueEvents: enqueue.enqueueEvents,
    backlogOf: queues.backlogOf,
    prepare: claim.prepare,
    describeFailure: reason.describeFailure,
    collectingJobOf: payloads.collectingJobOf,
    newClaimId: paths.newClaimId,
    isIgnoredName: spoolName.isIgnoredName,
    createCheckPool: checkPool.createCheckPool,
  };
}
