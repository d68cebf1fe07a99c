/**
 * Starting a redis-server child for the tests and the bench: a free loopback port, and its
 * readiness read from its log. The log is drained to the end (a full pipe would stall the server);
 * only the start-up text is kept, for the error when it does not start.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `count` distinct free loopback ports: each listened on at once, so no two are the same, then all
 * let go. A cluster node needs two (its own and its bus's): Redis's default bus port, the port
 * + 10,000, is never checked and once fell on a port in use (stop 42's CI run).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              if (typeof address === 'object' && address !== null) resolve(address.port);
              else reject(new Error('no port'));
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()))));
  }
}

/** Resolves when the server logs that it accepts connections; rejects after 10 s or if it cannot start. */
export function waitForRedisReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    let isReady = false;
    const timer = setTimeout(() => reject(new Error(`redis-server did not start in 10 s:\n${output}`)), 10_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start redis-server (is it installed?): ${error.message}`));
    });
    const read = (chunk: Buffer): void => {
      if (isReady) return;
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        isReady = true;
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
  });
}
