/**
 * `carrier-sync notify test [--channel <name>]`: one test message through each configured channel
 * (or the one named), one attempt each, and what each answered. Exit 1 when one failed. Needs no
 * Redis: it checks the channels, not the daemon.
 */
import type { Command } from 'commander';
import { CHANNEL_NAMES, type ChannelName } from '../notify/channel.js';
import { usageError } from './usage-error.js';
import { configOf, print } from './shared.js';

const VARIABLE_OF: Readonly<Record<ChannelName, string>> = {
  webhook: 'CARRIER_SYNC_NOTIFY_WEBHOOK_URL',
  slack: 'CARRIER_SYNC_NOTIFY_SLACK_URL',
  email: 'CARRIER_SYNC_NOTIFY_SMTP_URL',
};

export function registerNotify(program: Command): void {
  const notify = program.command('notify').description('notification channels (webhook, Slack, e-mail)');
  notify
    .command('test')
    .description('send a test message through each configured notification channel and print what each answered; exit 1 if one failed')
    .option('--channel <name>', `only this channel: ${CHANNEL_NAMES.join(', ')}`)
    .action(async (options: { channel?: string }, command: Command) => {
      const wanted = options.channel;
      if (wanted !== undefined && !(CHANNEL_NAMES as readonly string[]).includes(wanted)) {
        throw usageError('cli.usage.notify.channel', { channels: CHANNEL_NAMES.join(', '), value: wanted });
      }
      const config = await configOf(command);
      // Imported here: nodemailer and the runtime load only when the command runs.
      const { channelsOf } = await import('../notify/configured.js');
      const { originOf } = await import('../runtime/roles/notify-role.js');
      const { translator } = await import('../i18n/translate.js');
      const { makeNotification } = await import('../notify/message.js');
      const t = translator(config.lang);
      const all = channelsOf(config.notify, t);
      const channels = wanted === undefined ? all : all.filter((c) => c.name === wanted);
      if (channels.length === 0) {
        throw wanted === undefined
          ? usageError('cli.usage.notify.noChannel', { variables: Object.values(VARIABLE_OF).join(', ') })
          : usageError('cli.usage.notify.notConfigured', { channel: wanted, variable: VARIABLE_OF[wanted as ChannelName] });
      }
      const origin = originOf();
      const message = makeNotification(
        origin,
        'test',
        'firing',
        t('notify.test.summary', { host: origin.host }),
        { sentBy: 'carrier-sync notify test' },
        Date.now(),
      );
      let failed = 0;
      for (const channel of channels) {
        try {
          const answer = await channel.send(message);
          print(`${channel.name.padEnd(8)} ok      ${channel.target}  ${answer}`);
        } catch (error) {
          failed++;
          print(`${channel.name.padEnd(8)} FAILED  ${channel.target}  ${(error as Error).message}`);
        } finally {
          await channel.close().catch(() => undefined);
        }
      }
      if (failed > 0) process.exitCode = 1;
    });
}
