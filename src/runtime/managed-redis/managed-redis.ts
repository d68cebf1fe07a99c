/**
 * With no REDIS_URL, carrier-sync runs its own redis-server: data (AOF on, fsync every second)
 * under `managedDir`, loopback only, `noeviction`. Its port is written to `<dir>/port`, so a second
 * carrier-sync process or a CLI command on the same machine finds and reuses the running one.
 *
 * Lifecycle: whoever needs Redis first (`start`, or a CLI command such as `status`) starts it, as a
 * detached child (a process group of its own: a terminal's Ctrl-C does not reach it). A clean stop
 * (the first SIGINT/SIGTERM, or a CLI command ending) stops it once the process has closed its own
 * connections, unless another client still uses it (a daemon, another command, a redis-cli): then
 * the last of them to stop cleanly stops it. The daemon's other exits (a second signal, the grace
 * period running out) stop it at once with `stopManagedRedisNow`: this process's own connections,
 * still open, are told from other clients by their ports (runtime/managed-redis/proc-net.ts). Only a `kill -9`
 * leaves it running with its data, and the next process reuses it. SHUTDOWN writes the AOF out
 * first, so a stop loses nothing; the next start reads the data back from `managedDir`.
 *
 * While a process uses it, the server is kept (`keepServer`): one that exits under it (the kernel's
 * OOM killer, a `kill -9`, a crash) is started again on its port with its data within a second or
 * two, so every connection finds it where it was. Before, the daemon waited for it for ever, its
 * spool lease lost and /healthz ok. Its AOF is fsynced every second: what the last second wrote
 * may be gone, which the daemon's reconciles take as any Redis restart (docs/operations.md).
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { configRefusal } from '../../config/refusal.js';
import type { Logger } from '../../log.js';
import { infoNumber, parseInfo } from '../../store/redis-info.js';
import { ownLocalPorts } from './proc-net.js';
import { isProcessRunning } from '../../process-running.js';

export interface ManagedRedis {
  url: string;
  isStartedHere: boolean;
  /**
   * For a clean stop, once this process has closed its own connections: shuts the server down
   * unless another client still uses it. Idempotent; never throws.
   */
  stop(): Promise<void>;
}

/** How long other clients may take to go before the server is left to them. */
const OTHERS_GRACE_MS = 2000;
const STOP_TIMEOUT_MS = 15_000;
/** How long an at-once exit may spend stopping the managed redis-server. */
const STOP_NOW_MS = 5000;
/** How often the kept server's pid is looked at. */
const KEEP_EVERY_MS = 1000;
/** A server that will not start again is tried again this often (said once until it starts). */
const KEEP_RETRY_MS = 5000;

/** The managed redis-server this process uses (started or reused here), for the at-once stop. */
let inUse: { dataDir: string; port: number; isStartedHere: boolean; logger: Logger } | null = null;

export async function ensureManagedRedis(dir: string, port: number, logger: Logger): Promise<ManagedRedis> {
  const dataDir = resolve(dir);
  const portFile = join(dataDir, 'port');
  const known = Number((await readFile(portFile, 'utf8').catch(() => '')).trim());
  if (known > 0 && (await answers(known))) {
    logger.info({ dir: dataDir, port: known }, 'using the managed redis-server already running (REDIS_URL is not set)');
    inUse = { dataDir, port: known, isStartedHere: false, logger };
    return handleOf(dataDir, known, false, logger, await serverPid(known));
  }
  await refuseWithoutRedisServer();
  const chosen = port > 0 ? port : await freePort();
  // From the spawn on, an at-once exit stops it (even while it is still starting).
  inUse = { dataDir, port: chosen, isStartedHere: true, logger };
  const redisPid = await startServer(dataDir, chosen);
  await writeFile(join(dataDir, 'port'), `${chosen}\n`);
  logger.info({ dir: dataDir, port: chosen, redisPid }, 'started a managed redis-server (REDIS_URL is not set)');
  return handleOf(dataDir, chosen, true, logger, redisPid);
}

/** Starts redis-server on `port` with its data in `dataDir` and waits until it answers; its pid. */
async function startServer(dataDir: string, port: number): Promise<number> {
  await mkdir(dataDir, { recursive: true });
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dataDir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
      '--daemonize',
      'no',
      '--logfile',
      join(dataDir, 'redis.log'),
    ],
    { detached: true, stdio: 'ignore' },
  );
  await new Promise<void>((resolvePromise, reject) => {
    child.once('error', (error) => reject(new Error(`cannot start redis-server (install it, or set REDIS_URL): ${error.message}`)));
    child.once('spawn', () => resolvePromise());
  });
  child.unref();
  const deadline = Date.now() + 15_000;
  while (!(await answers(port))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`managed redis-server did not start; see ${join(dataDir, 'redis.log')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return child.pid ?? 0;
}

/**
 * Looks at the server's pid every second while this process uses it; one that is gone is started
 * again on its port with its data (or, when another process of the folder did so first, the one that
 * answers there is kept). One warning when it went, one info line when it is back; a start that fails
 * is one error line, tried again every 5 s. Stopped by the handle's `stop` and by an at-once exit.
 */
function keepServer(dataDir: string, port: number, firstPid: number, logger: Logger): { stop(): void } {
  let pid = firstPid;
  let isStopped = false;
  let isFailing = false;
  let nextTryAt = 0;
  let timer: NodeJS.Timeout | undefined;
  const look = async (): Promise<void> => {
    if (pid > 0 && isProcessRunning(pid)) return;
    if (Date.now() < nextTryAt) return;
    const answering = await serverPid(port);
    if (isStopped) return;
    if (answering > 0) {
      pid = answering;
      return;
    }
    if (!isFailing) logger.warn({ port, redisPid: pid, dir: dataDir }, 'the managed redis-server exited: starting it again on its port with its data');
    try {
      pid = await startServer(dataDir, port);
      isFailing = false;
      logger.info({ port, redisPid: pid }, 'started the managed redis-server again');
    } catch (error) {
      nextTryAt = Date.now() + KEEP_RETRY_MS;
      if (!isFailing) logger.error({ port, err: error, retryMs: KEEP_RETRY_MS }, 'could not start the managed redis-server again; trying again');
      isFailing = true;
    }
  };
  const schedule = (): void => {
    if (isStopped) return;
    timer = setTimeout(
      () =>
        void look()
          .catch((error: unknown) => logger.warn({ port, err: error }, 'looking at the managed redis-server failed'))
          .finally(schedule),
      KEEP_EVERY_MS,
    );
    timer.unref();
  };
  if (firstPid > 0) schedule();
  return {
    stop() {
      isStopped = true;
      clearTimeout(timer);
    },
  };
}

/** The pid of the redis-server answering on `port`, or 0 when none answers. */
function serverPid(port: number): Promise<number> {
  return askServer(port, async (probe) => infoNumber(parseInfo(await probe.info('server')), 'process_id') ?? 0, 0);
}

/**
 * The container image (and any host without Redis installed) has no redis-server: say that Redis
 * must be given before touching the disk, instead of failing on the data folder (a read-only
 * /app in the image) or on the spawn. Checked on PATH, as spawn() would look it up.
 */
async function refuseWithoutRedisServer(): Promise<void> {
  for (const folder of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const isExecutable = await access(join(folder, 'redis-server'), constants.X_OK).then(
      () => true,
      () => false,
    );
    if (isExecutable) return;
  }
  throw configRefusal('config.error.noRedisServer');
}

function handleOf(dataDir: string, port: number, isStartedHere: boolean, logger: Logger, redisPid: number): ManagedRedis {
  let stopping: Promise<void> | undefined;
  const keeper = keepServer(dataDir, port, redisPid, logger);
  keepers.add(keeper);
  return {
    url: `redis://127.0.0.1:${port}`,
    isStartedHere,
    stop: () => {
      keeper.stop();
      keepers.delete(keeper);
      return (stopping ??= stopUnlessShared(dataDir, port, logger).catch((error: unknown) =>
        logger.warn({ port, err: error }, 'could not stop the managed redis-server'),
      ));
    },
  };
}

/** The keepers of this process's handles: an at-once exit stops them before it stops the server. */
const keepers = new Set<{ stop(): void }>();

async function stopUnlessShared(dataDir: string, port: number, logger: Logger): Promise<void> {
  const admin = stopConnection(port);
  let redisPid: number;
  try {
    try {
      await admin.connect();
    } catch {
      return; // already gone
    }
    const ownId = Number(await admin.client('ID'));
    // This process's connections were closed just before; the server drops them a moment later.
    const deadline = Date.now() + OTHERS_GRACE_MS;
    let others = namesOf(otherClients(String(await admin.client('LIST')), ownId));
    while (others.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      others = namesOf(otherClients(String(await admin.client('LIST')), ownId));
    }
    if (others.length > 0) {
      logger.info({ port, clients: others.length, names: [...new Set(others)] }, 'left the managed redis-server running: other clients use it');
      return;
    }
    redisPid = await shutDown(admin);
  } finally {
    admin.disconnect();
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (redisPid > 0 && isProcessRunning(redisPid)) {
    if (Date.now() > deadline) throw new Error(`redis-server ${redisPid} still runs ${STOP_TIMEOUT_MS} ms after SHUTDOWN`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await forgetPortFile(dataDir, port);
  if (inUse?.port === port) inUse = null;
  logger.info({ port, redisPid }, 'stopped the managed redis-server');
}

/**
 * For an exit that cannot wait (a second signal, the grace period over): stops the managed
 * redis-server this process uses now, within 5 s, unless a client other than this process still
 * uses it. This process's connections are still open: they are told apart by their local ports.
 * Where those cannot be read (no /proc), a server started here is stopped, one reused is left to
 * whoever started it. Never throws.
 */
export async function stopManagedRedisNow(): Promise<void> {
  for (const keeper of keepers) keeper.stop();
  keepers.clear();
  const current = inUse;
  if (current === null) return;
  const { logger, port } = current;
  let timer: NodeJS.Timeout | undefined;
  const isDone = await Promise.race([
    stopNow(current).then(
      () => true,
      (error: unknown) => {
        logger.warn({ port, err: error }, 'could not stop the managed redis-server');
        return true;
      },
    ),
    new Promise<false>((resolvePromise) => (timer = setTimeout(() => resolvePromise(false), STOP_NOW_MS))),
  ]);
  clearTimeout(timer);
  if (!isDone) logger.warn({ port, timeoutMs: STOP_NOW_MS }, 'could not stop the managed redis-server in time');
}

async function stopNow({ dataDir, port, isStartedHere, logger }: NonNullable<typeof inUse>): Promise<void> {
  const admin = stopConnection(port);
  let redisPid: number;
  try {
    try {
      await admin.connect();
    } catch {
      return; // already gone (or not started yet: nothing answers)
    }
    const ownId = Number(await admin.client('ID'));
    const own = ownLocalPorts();
    const clients = otherClients(String(await admin.client('LIST')), ownId);
    const others = own === null ? (isStartedHere ? [] : clients) : clients.filter((fields) => !own.has(portOf(fields['addr'])));
    if (others.length > 0) {
      logger.info({ port, clients: others.length, names: [...new Set(namesOf(others))] }, 'left the managed redis-server running: other clients use it');
      return;
    }
    redisPid = await shutDown(admin);
  } finally {
    admin.disconnect();
  }
  // SHUTDOWN's own end (the AOF written out) is waited for 3 s; then it is told to go with SIGTERM.
  const deadline = Date.now() + 3000;
  let isTermSent = false;
  while (redisPid > 0 && isProcessRunning(redisPid)) {
    if (!isTermSent && Date.now() > deadline) {
      isTermSent = true;
      process.kill(redisPid, 'SIGTERM');
    }
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
  }
  await forgetPortFile(dataDir, port);
  logger.info({ port, redisPid }, 'stopped the managed redis-server');
}

/** A connection of its own to stop the managed redis-server: one try, no retry, errors kept quiet. */
function stopConnection(port: number): Redis {
  const admin = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    connectionName: 'carrier-sync:stop',
  });
  admin.on('error', () => {});
  return admin;
}

/** SHUTDOWN through `admin`; the server's pid (0 if unknown), to wait for its end. */
async function shutDown(admin: Redis): Promise<number> {
  const redisPid = infoNumber(parseInfo(await admin.info('server')), 'process_id') ?? 0;
  // No reply on success: the server closes the connection as it goes.
  await admin.call('SHUTDOWN').catch((error: Error) => {
    if (!/Connection is closed|ECONNRESET/.test(error.message)) throw error;
  });
  return redisPid;
}

/** The port file names a server that is gone; a server started since (another port) keeps its own. */
async function forgetPortFile(dataDir: string, port: number): Promise<void> {
  const portFile = join(dataDir, 'port');
  if (Number((await readFile(portFile, 'utf8').catch(() => '')).trim()) === port) await rm(portFile, { force: true });
}

/** The port of CLIENT LIST's `addr` (`127.0.0.1:40312`); NaN when there is none. */
function portOf(addr: string | undefined): number {
  return addr === undefined ? NaN : Number(addr.slice(addr.lastIndexOf(':') + 1));
}

/** The names (or `addr` when unnamed) of CLIENT LIST's connections. */
function namesOf(clients: ReadonlyArray<Record<string, string>>): string[] {
  return clients.map((fields) => (fields['name'] !== undefined && fields['name'] !== '' ? fields['name'] : (fields['addr'] ?? '?')));
}

/** CLIENT LIST's connections other than `ownId`, each as its fields. */
function otherClients(list: string, ownId: number): Array<Record<string, string>> {
  return list
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(
      (line) =>
        Object.fromEntries(
          line
            .trim()
            .split(' ')
            .map((field) => [field.slice(0, field.indexOf('=')), field.slice(field.indexOf('=') + 1)]),
        ) as Record<string, string>,
    )
    .filter((fields) => Number(fields['id']) !== ownId);
}

function answers(port: number): Promise<boolean> {
  return askServer(port, async (probe) => (await probe.ping()) === 'PONG', false);
}

/** One question to whatever listens on `port`, on a connection of its own (one try, no retry); `otherwise` when nothing answers it. */
async function askServer<T>(port: number, ask: (probe: Redis) => Promise<T>, otherwise: T): Promise<T> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return await ask(probe);
  } catch {
    return otherwise;
  } finally {
    probe.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePromise(address.port) : reject(new Error('no free port'))));
    });
  });
}
