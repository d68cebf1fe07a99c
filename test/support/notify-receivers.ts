/**
 * Real receivers for the notification channels: an HTTP server that records what was POSTed (and
 * checks the webhook signature the way a receiver should: HMAC over the raw bytes, compared in
 * constant time), and an SMTP server (smtp-server, from the nodemailer project) with STARTTLS on a
 * self-signed certificate made for the test, and password authentication.
 */
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';

export interface HttpDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  json: unknown;
  /** With a secret: did `X-Carrier-Sync-Signature` match the raw body? Null without one. */
  isSignatureValid: boolean | null;
}

export interface HttpReceiver {
  url: string;
  received: HttpDelivery[];
  /** Answers for the next requests (status, body); afterwards 200 `ok`. */
  answerNext(...answers: Array<{ status: number; body?: string }>): void;
  close(): Promise<void>;
}

export async function startHttpReceiver(options: { secret?: string; path?: string } = {}): Promise<HttpReceiver> {
  const received: HttpDelivery[] = [];
  const queued: Array<{ status: number; body?: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        json = null;
      }
      let isSignatureValid: boolean | null = null;
      if (options.secret !== undefined) {
        const expected = Buffer.from(`sha256=${createHmac('sha256', options.secret).update(Buffer.concat(chunks)).digest('hex')}`);
        const given = Buffer.from(String(req.headers['x-carrier-sync-signature'] ?? ''));
        isSignatureValid = given.length === expected.length && timingSafeEqual(given, expected);
      }
      const answer = queued.shift() ?? { status: 200, body: 'ok' };
      // Only what was accepted counts as received.
      if (answer.status < 300) received.push({ path: req.url ?? '', headers: req.headers, raw, json, isSignatureValid });
      res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${options.path ?? '/hook'}`,
    received,
    answerNext: (...answers) => queued.push(...answers),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ReceivedMail {
  user: string;
  from: string;
  to: string[];
  isSecure: boolean;
  headers: Record<string, string>;
  /** The body, transfer encoding undone. */
  text: string;
}

export interface SmtpReceiver {
  port: number;
  /** smtp://user:pass@127.0.0.1:port */
  url: string;
  mails: ReceivedMail[];
  /** Logins refused (wrong user or password). */
  refusedLogins: number;
  close(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1, made with openssl for this test run. */
function selfSignedCert(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'cs-smtp-cert-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startSmtpReceiver(credentials: { user: string; password: string }): Promise<SmtpReceiver> {
  const mails: ReceivedMail[] = [];
  const receiver = { refusedLogins: 0 };
  const server = new SMTPServer({
    ...selfSignedCert(),
    authMethods: ['PLAIN', 'LOGIN'],
    // The default, said out loud: no AUTH before STARTTLS, so a client that logs in used TLS.
    allowInsecureAuth: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.user && auth.password === credentials.password) return callback(null, { user: auth.username });
      receiver.refusedLogins++;
      return callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const [head = '', ...rest] = raw.split(/\r?\n\r?\n/);
        const headers = parseHeaders(head);
        const body = rest.join('\n\n');
        mails.push({
          user: String(session.user),
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          isSecure: session.secure,
          headers,
          text: (headers['content-transfer-encoding'] ?? '').toLowerCase() === 'quoted-printable' ? decodeQuotedPrintable(body) : body,
        });
        callback(null, 'queued as test');
      });
    },
    logger: false,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    url: `smtp://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`,
    mails,
    get refusedLogins() {
      return receiver.refusedLogins;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function parseHeaders(head: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}

function decodeQuotedPrintable(text: string): string {
  const softBreaksGone = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < softBreaksGone.length; i++) {
    const ch = softBreaksGone[i]!;
    if (ch === '=' && /^[0-9A-F]{2}$/i.test(softBreaksGone.slice(i + 1, i + 3))) {
      bytes.push(parseInt(softBreaksGone.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(ch, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8').replace(/\r\n/g, '\n');
}
