/** The channels a configuration turns on: each one whose variable is set. */
import type { NotifyConfig } from '../config/schema.js';
import type { Translate } from '../i18n/translate.js';
import type { Channel } from './channel.js';
import { createEmailChannel } from './email.js';
import { createSlackChannel } from './slack.js';
import { createWebhookChannel } from './webhook.js';

/** `t`: the words of Slack and e-mail messages, in CARRIER_SYNC_LANG (the webhook's body is the message itself). */
export function channelsOf(notify: NotifyConfig, t: Translate): Channel[] {
  const timeoutMs = notify.sendTimeoutMs;
  const channels: Channel[] = [];
  if (notify.webhook.url !== null) channels.push(createWebhookChannel({ url: notify.webhook.url, secret: notify.webhook.secret, timeoutMs }));
  if (notify.slack.url !== null) channels.push(createSlackChannel({ url: notify.slack.url, timeoutMs, t }));
  if (notify.email.smtpUrl !== null) channels.push(createEmailChannel({ email: notify.email, smtpUrl: notify.email.smtpUrl, timeoutMs, t }));
  return channels;
}
