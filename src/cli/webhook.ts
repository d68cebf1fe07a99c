import type { Command } from 'commander';
import { createLogger } from '../log.js';
import { usageError } from './usage-error.js';
import { configOf, print, withContext } from './shared.js';

export function registerWebhook(program: Command): void {
  const webhook = program.command('webhook').description('the carrier webhook registration');
  webhook
    .command('set')
    .description('PATCH the registration with the complete record (the API overwrites the whole record: headers not given become null)')
    .argument('<webhook_id>', 'the registration to overwrite')
    .requiredOption('--url <url>', 'where the API delivers webhook events')
    .option('--header <K=V>', 'a header the API sends with each event (repeatable)', (value: string, all: string[]) => [...all, value], [] as string[])
    .option('--events <a,b>', 'subscribed events, comma-separated', '')
    .action(async (webhookId: string, options: { url: string; header: string[]; events: string }, command: Command) => {
      if (!/^https?:\/\//.test(options.url)) throw usageError('cli.usage.webhook.url', { value: options.url });
      const headers: Record<string, string> = {};
      for (const pair of options.header) {
        const at = pair.indexOf('=');
        if (at <= 0) throw usageError('cli.usage.webhook.header', { value: pair });
        headers[pair.slice(0, at)] = pair.slice(at + 1);
      }
      const record = {
        url: options.url,
        headers: options.header.length === 0 ? null : headers,
        events: options.events
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean),
      };
      const config = await configOf(command);
      const [{ apiClientFor }, { rateLimiterFor }, { resolveApiTarget }, { applyWebhook }] = await Promise.all([
        import('../runtime/api-client.js'),
        import('../gate/limiter.js'),
        import('../runtime/api-target.js'),
        import('../runtime/roles/webhook.js'),
      ]);
      await withContext(command, async (ctx) => {
        const target = await resolveApiTarget(config, createLogger({ level: 'warn' }), ctx.closers);
        const client = apiClientFor(config, target, { connections: 1 });
        ctx.closers.push('api client', () => client.close());
        await applyWebhook(ctx, { client, limiter: rateLimiterFor(ctx, target.carrierKey) }, webhookId, record, {
          ttlSec: ctx.config.history.retentionDays * 86_400,
          by: 'cli',
        });
      });
      if (record.headers === null) print(`webhook ${webhookId} set (no headers given: the registration's headers are now null)`);
      else print(`webhook ${webhookId} set with headers ${Object.keys(record.headers).join(', ')}`);
    });
}
