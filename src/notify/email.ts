/**
 * E-mail over SMTP with nodemailer. `smtp://user:pass@host:587` upgrades with STARTTLS (required
 * unless `requireTls` is off: the password never crosses the network in clear); `smtps://…:465`
 * is TLS from the first byte. The server's certificate is checked unless `rejectUnauthorized` is
 * off. One connection per message: notifications are rare, a pool would only hold sockets open.
 * nodemailer (~40 modules) is imported at the first message, not when the daemon starts.
 */
import type { Transporter } from 'nodemailer';
import type { NotifyConfig } from '../config/schema.js';
import { freshValueOf, type Secret } from '../config/secret-file.js';
import type { Translate } from '../i18n/translate.js';
import type { Channel } from './channel.js';
import { plainTextOf, titleOf, type Notification } from './message.js';

export interface SmtpTarget {
  host: string;
  port: number;
  isTls: boolean;
  user: string | null;
  password: string | null;
}

/** Reads `smtp[s]://[user[:pass]@]host[:port]`; throws (without the URL) when it cannot. */
export function parseSmtpUrl(url: string): SmtpTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('CARRIER_SYNC_NOTIFY_SMTP_URL is not a valid URL');
  }
  const isTls = parsed.protocol === 'smtps:';
  if (!isTls && parsed.protocol !== 'smtp:') throw new Error('CARRIER_SYNC_NOTIFY_SMTP_URL must start with smtp:// or smtps://');
  return {
    host: parsed.hostname,
    port: parsed.port === '' ? (isTls ? 465 : 587) : Number(parsed.port),
    isTls,
    user: parsed.username === '' ? null : decodeURIComponent(parsed.username),
    password: parsed.password === '' ? null : decodeURIComponent(parsed.password),
  };
}

export interface EmailContent {
  subject: string;
  text: string;
}

export function emailContentOf(n: Notification, t: Translate): EmailContent {
  return { subject: `carrier-sync ${titleOf(n, t)}`, text: plainTextOf(n, t) };
}

/** What one SMTP URL makes: its nodemailer transport (made at its first message) and what to strip from errors. */
interface SmtpSession {
  url: string;
  target: SmtpTarget;
  transport: Transporter | null;
  secrets: string[];
}

/**
 * `smtpUrl` given as a file is read again at each send (issue 45): a changed URL (a rotated password,
 * another server) closes the transport of the old one and makes a new one. An unparsable URL fails
 * that send with the reason (never the URL) and is read again at the next.
 */
export function createEmailChannel(options: { email: Omit<NotifyConfig['email'], 'smtpUrl'>; smtpUrl: Secret; timeoutMs: number; t: Translate }): Channel {
  const sessionOf = (url: string): SmtpSession => {
    const target = parseSmtpUrl(url);
    const secrets = [target.password, target.user].filter((s): s is string => s !== null && s.length >= 3);
    return { url, target, transport: null, secrets };
  };
  // Parsed at once: a wrong URL at start fails the start, as before.
  let session = sessionOf(freshValueOf(options.smtpUrl));
  const transportOptionsOf = (target: SmtpTarget) => ({
    host: target.host,
    port: target.port,
    secure: target.isTls,
    requireTLS: !target.isTls && options.email.requireTls,
    ...(target.user === null ? {} : { auth: { user: target.user, pass: target.password ?? '' } }),
    tls: { rejectUnauthorized: options.email.rejectUnauthorized },
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
  });
  const currentSession = (): SmtpSession => {
    const url = freshValueOf(options.smtpUrl);
    if (url === session.url) return session;
    const next = sessionOf(url);
    session.transport?.close();
    session = next;
    return session;
  };
  const where = (target: SmtpTarget): string => `${target.isTls ? 'smtps' : 'smtp'}://${target.host}:${target.port}`;

  return {
    name: 'email',
    get target() {
      return where(session.target);
    },
    async send(n) {
      const content = emailContentOf(n, options.t);
      const used = currentSession();
      try {
        used.transport ??= (await import('nodemailer')).createTransport(transportOptionsOf(used.target));
        const info = await used.transport.sendMail({ from: options.email.from ?? undefined, to: [...options.email.to], ...content });
        return String(info.response ?? 'accepted');
      } catch (error) {
        // nodemailer's messages carry the server's answer ("535 5.7.8 …"); strip any credential anyway.
        let message = (error as Error).message;
        for (const secret of used.secrets) message = message.split(secret).join('[redacted]');
        throw new Error(`SMTP ${used.target.host}:${used.target.port}: ${message}`, { cause: error });
      }
    },
    async close() {
      session.transport?.close();
    },
  };
}
