/**
 * The ops port while the daemon starts, before Redis has answered (issue 35): a probe must get an
 * answer within seconds of the start, whatever Redis does.
 *
 *   GET /healthz   200 {"status":"ok","version":…}: the process is alive
 *   GET /readyz    503 {"status":"unready","reason":…}: why it is not ready yet (the address of
 *                  the Redis it tries and the setting that gave it; never a password)
 *   anything else  503 with the same reason: the overview, metrics and ingest come with the roles
 *
 * Plain node:http, no Fastify: the full ops server (server.ts) needs the queues, which need Redis.
 * Once Redis answers, `close()` hands the port over: the full server listens right after, on the
 * port this one had (a port of 0 in the config then stays the one picked here).
 */
import { createServer, type Server } from 'node:http';
import { appVersion } from '../version.js';
import { reachableHost } from './reachable-host.js';

export interface WaitingServer {
  /** The port it listens on. */
  port: number;
  url: string;
  /** What `/readyz` says meanwhile. */
  setReason(reason: string): void;
  /** Idempotent; resolves once the port is free. */
  close(): Promise<void>;
}

export async function startWaitingServer(host: string, port: number, reason: string): Promise<WaitingServer> {
  let current = reason;
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const isHealth = request.method === 'GET' && path === '/healthz';
    const body = isHealth ? { status: 'ok', version: appVersion() } : { status: 'unready', reason: current };
    response.writeHead(isHealth ? 200 : 503, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
    response.end(JSON.stringify(body));
  });
  await listen(server, host, port);
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  let closing: Promise<void> | undefined;
  return {
    port: bound,
    url: `http://${reachableHost(host)}:${bound}`,
    setReason(next) {
      current = next;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
