/** The channels a configuration turns on: each one whose variable is set. */
import type { NotifyConfig } from '../config/schema.js';
import type { Channel } from './channel.js';
import { createEmailChannel } from './email.js';
import { createSlackChannel } from './slack.js';
import { createWebhookChannel } from './webhook.js';

export function channelsOf(notify: NotifyConfig): Channel[] {
  const timeoutMs = notify.sendTimeoutMs;
  const channels: Channel[] = [];
  if (notify.webhook.url !== null) channels.push(createWebhookChannel({ url: notify.webhook.url, secret: notify.webhook.secret, timeoutMs }));
  if (notify.slack.url !== null) channels.push(createSlackChannel({ url: notify.slack.url, timeoutMs }));
  if (notify.email.smtpUrl !== null) channels.push(createEmailChannel({ email: notify.email, smtpUrl: notify.email.smtpUrl, timeoutMs }));
  return channels;
}
