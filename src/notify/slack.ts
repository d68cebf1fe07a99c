/**
 * Slack (and compatible: Mattermost, Rocket.Chat, Discord's /slack endpoint) incoming webhooks.
 * The payload follows Slack's documented shape: `text` (the fallback shown in notifications and by
 * services that ignore blocks) plus `blocks`: a header (plain_text, at most 150 characters), a
 * section with the details (mrkdwn, at most 3000) and a context line (host, version, time).
 * Slack's mrkdwn wants `&`, `<` and `>` escaped; a link is `<url|label>`.
 */
import { currentValueOf, freshValueOf, type Secret } from '../config/secret-file.js';
import { originOf, postJson, type Channel } from './channel.js';
import type { Translate } from '../i18n/translate.js';
import { detailLines, titleOf, type Notification } from './message.js';

const HEADER_MAX_CHARS = 150;
const SECTION_MAX_CHARS = 3000;
const ICON = { firing: ':red_circle:', resolved: ':large_green_circle:', digest: ':page_facing_up:' } as const;

export interface SlackPayload {
  text: string;
  blocks: Array<
    | { type: 'header'; text: { type: 'plain_text'; text: string; emoji: boolean } }
    | { type: 'section'; text: { type: 'mrkdwn'; text: string } }
    | { type: 'context'; elements: Array<{ type: 'mrkdwn'; text: string }> }
  >;
}

export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

export function slackPayloadOf(n: Notification, t: Translate): SlackPayload {
  const overview = n.details['overview'];
  const lines = detailLines(n.details, t).map((line) => {
    // The overview's link (a digest's) as a link named for a person.
    const link = /^[^:]+: (https?:\/\/\S+)$/.exec(line);
    return link === null || link[1] !== overview ? escapeMrkdwn(line) : `<${link[1]}|${escapeMrkdwn(t('notify.openOverview'))}>`;
  });
  const title = titleOf(n, t);
  return {
    text: `${ICON[n.state]} ${escapeMrkdwn(title)}`,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: cut(title, HEADER_MAX_CHARS), emoji: true } },
      { type: 'section', text: { type: 'mrkdwn', text: cut(lines.length === 0 ? `_${t('notify.noDetails')}_` : lines.join('\n'), SECTION_MAX_CHARS) } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: escapeMrkdwn(`${n.host} · carrier-sync ${n.version} · ${n.at}`) }] },
    ],
  };
}

/** `url` given as a file is read again at each send (issue 45). */
export function createSlackChannel(options: { url: Secret; timeoutMs: number; t: Translate }): Channel {
  return {
    name: 'slack',
    get target() {
      return originOf(currentValueOf(options.url));
    },
    send: (n, signal) => postJson(freshValueOf(options.url), JSON.stringify(slackPayloadOf(n, options.t)), {}, options.timeoutMs, signal),
    async close() {},
  };
}
