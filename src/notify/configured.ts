/**
 * The channels a configuration turns on: each one whose variable is set. Which channels there are is
 * decided here, once: a URL given as a file that was empty or missing at start turns its channel off
 * until a restart, and so does a webhook secret for the signature. A channel that is on reads its
 * `_FILE` again at each send (issue 45), so a rotated Secret reaches the next message.
 */
import type { NotifyConfig } from '../config/schema.js';
import { liveSecret } from '../config/secret-file.js';
import type { Translate } from '../i18n/translate.js';
import type { Channel } from './channel.js';
import { createEmailChannel } from './email.js';
import { createSlackChannel } from './slack.js';
import { createWebhookChannel } from './webhook.js';

/** `t`: the words of Slack and e-mail messages, in CARRIER_SYNC_LANG (the webhook's body is the message itself). `env`: where the `_FILE` variables are. */
export function channelsOf(notify: NotifyConfig, t: Translate, env: Readonly<Record<string, string | undefined>> = process.env): Channel[] {
  const timeoutMs = notify.sendTimeoutMs;
  const channels: Channel[] = [];
  if (notify.webhook.url !== null) {
    const url = liveSecret(env, 'CARRIER_SYNC_NOTIFY_WEBHOOK_URL', notify.webhook.url);
    const secret = notify.webhook.secret === null ? null : liveSecret(env, 'CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET', notify.webhook.secret);
    channels.push(createWebhookChannel({ url, secret, timeoutMs }));
  }
  if (notify.slack.url !== null) channels.push(createSlackChannel({ url: liveSecret(env, 'CARRIER_SYNC_NOTIFY_SLACK_URL', notify.slack.url), timeoutMs, t }));
  if (notify.email.smtpUrl !== null) {
    const smtpUrl = liveSecret(env, 'CARRIER_SYNC_NOTIFY_SMTP_URL', notify.email.smtpUrl);
    channels.push(createEmailChannel({ email: notify.email, smtpUrl, timeoutMs, t }));
  }
  return channels;
}
