import type { Command } from 'commander';
import { historyTtlSec } from '../journey/journey.js';
import { kindName } from '../i18n/kind-name.js';
import { localTime } from '../i18n/local-time.js';
import type { Lang, Translate } from '../i18n/translate.js';
import { usageError } from './usage-error.js';
import { parseDuration, print, withContext } from './shared.js';

export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('read, replay and purge dead-lettered items');
  dlq
    .command('list')
    .description('dead-lettered items with kind, delivery id, error code, message, attempts, first/last failure time')
    .option('--json', 'print JSON (with every attempt)')
    .action(async (options: { json?: boolean }, command: Command) => {
      const [{ listDeadLetters }, { describeFailure }, { translator }] = await Promise.all([
        import('../queue/dead-letter.js'),
        import('../i18n/reason.js'),
        import('../i18n/translate.js'),
      ]);
      const { letters, lang } = await withContext(command, async (ctx) => ({ letters: await listDeadLetters(ctx), lang: ctx.config.lang }));
      if (options.json === true) {
        print(JSON.stringify(letters, null, 2));
        return;
      }
      const t = translator(lang);
      if (letters.length === 0) {
        print(t('cli.dlq.none'));
        return;
      }
      for (const l of letters) {
        // The code, the API's code and status are on the line already: the reason is the meaning and the message.
        const reason = describeFailure(lang, { code: l.errorCode, message: l.message });
        const where = t('cli.dlq.where', { kind: kindName(l.kind, t), delivery: l.deliveryId, file: l.fileName ?? '-' });
        const when = t('cli.dlq.when', {
          attempts: String(l.attempts),
          first: l.firstFailureAt === null ? '-' : localTime(l.firstFailureAt),
          last: l.lastFailureAt === null ? '-' : localTime(l.lastFailureAt),
        });
        print(
          `${l.id}\n  ${where}\n  ${l.errorCode}${l.apiCode === null ? '' : ` / ${l.apiCode}`}${l.status === null ? '' : ` (HTTP ${l.status})`}: ${reason}\n  ${when}`,
        );
      }
      print(`\n${t('cli.dlq.total', { count: letters.length })}`);
    });
  dlq
    .command('retry')
    .description('put dead-lettered items back to work (their files move to archive/ once accepted)')
    .argument('[ids...]', 'ids from `dlq list`')
    .option('--all', 'every dead-lettered item')
    .action(async (ids: string[], options: { all?: boolean }, command: Command) => {
      if ((options.all === true) === ids.length > 0) throw usageError('cli.usage.dlq.idsOrAll');
      const { retryDeadLetters } = await import('../queue/dead-letter.js');
      const { retried, missing, lang } = await withContext(command, async (ctx) => ({
        lang: ctx.config.lang,
        ...(await retryDeadLetters(ctx, options.all === true ? 'all' : ids, {
          redis: ctx.redis,
          keys: ctx.keys,
          historyTtlSec: historyTtlSec(ctx.config.history.retentionDays),
          by: 'cli',
          nowMs: Date.now(),
        })),
      }));
      const t = await translatorOf(lang);
      print(`${t('cli.dlq.retried', { count: String(retried.length) })}${retried.length > 0 ? `: ${retried.join(', ')}` : ''}`);
      if (missing.length > 0) {
        print(t('cli.dlq.unknownIds', { ids: missing.join(', ') }));
        process.exitCode = 1;
      }
    });
  dlq
    .command('purge')
    .description('drop dead-lettered items (their files stay under failed/)')
    .option('--older-than <duration>', 'only items dead-lettered longer ago than this, e.g. 30d, 12h, 15m')
    .action(async (options: { olderThan?: string }, command: Command) => {
      const olderThanMs = options.olderThan === undefined ? null : parseDuration(options.olderThan);
      if (olderThanMs === null && options.olderThan !== undefined) throw usageError('cli.usage.dlq.olderThan', { value: options.olderThan });
      const { purgeDeadLetters } = await import('../queue/dead-letter.js');
      const { purged, lang } = await withContext(command, async (ctx) => ({
        purged: await purgeDeadLetters(ctx, olderThanMs, Date.now()),
        lang: ctx.config.lang,
      }));
      print((await translatorOf(lang))('cli.dlq.purged', { count: String(purged.length) }));
    });
}

async function translatorOf(lang: Lang): Promise<Translate> {
  return (await import('../i18n/translate.js')).translator(lang);
}
