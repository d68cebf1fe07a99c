/**
 * Counting what reaches Redis from its own side (issue 46): `MONITOR` on a connection of its own
 * shows every command any client sends (a top-level command: one request on the wire, the issue's
 * "round trip") and, for EVAL/EVALSHA, each `redis.call` the script makes, marked `lua` as its
 * source. Nothing a caller does can hide from it: polls, leases and health checks count.
 *
 * Scripts are named by the SHA-1 of their body, as ioredis sends them: BullMQ's (its
 * `dist/esm/scripts/*.js`, each a `{ name, content }`) and ours (`definedScripts()` once every
 * module that defines one was imported). ioredis sends a script's body (EVAL) at its first call on
 * a socket and its SHA (EVALSHA) after: both count, as `eval <name>` and `evalsha <name>`. A
 * script's inner commands are the `lua` lines that follow its EVAL/EVALSHA line (Redis 7.0 feeds
 * the call before running it; a `lua` line before any script would count as `(no script)`).
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { PACKAGE_ROOT } from '../../../src/config/load.js';
import { definedScripts } from '../../../src/store/script.js';

export interface MonitorLine {
  /** Redis' clock, epoch ms (microseconds as the fraction). */
  at: number;
  /** 'lua' for a script's inner call, else the client's address (ip:port). */
  source: string;
  /** Lower case; EVALSHA/EVAL as `evalsha <script name>`. */
  name: string;
  /** The script a top-level EVAL/EVALSHA runs, or the script a `lua` line runs in. */
  script?: string;
}

export interface Recorder {
  lines: MonitorLine[];
  stop(): Promise<void>;
}

const sha1 = (text: string | Buffer): string => createHash('sha1').update(text).digest('hex');

/** SHA-1 → a script's name: BullMQ's by their file's `name`, ours by `defineScript`'s name. */
export async function scriptNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const bullDir = join(PACKAGE_ROOT, 'node_modules', 'bullmq', 'dist', 'esm', 'scripts');
  for (const file of (await readdir(bullDir)).filter((f) => f.endsWith('.js') && f !== 'index.js')) {
    const mod = (await import(pathToFileURL(join(bullDir, file)).href)) as Record<string, { name?: string; content?: string }>;
    for (const value of Object.values(mod)) if (typeof value?.content === 'string') names.set(sha1(value.content), `bullmq ${value.name ?? file}`);
  }
  // Every module of ours that defines a script, imported so its definitions run.
  const srcDir = join(PACKAGE_ROOT, 'dist', 'src');
  const files = (await readdir(srcDir, { recursive: true })).filter((f) => f.endsWith('.js'));
  for (const file of files) {
    const text = await readFile(join(srcDir, file), 'utf8');
    if (text.includes('defineScript(') && !file.endsWith(join('store', 'script.js'))) await import(pathToFileURL(join(srcDir, file)).href);
  }
  // The built module's definitions, and this process' own when it runs from the sources (a test).
  const built = (await import(pathToFileURL(join(srcDir, 'store', 'script.js')).href)) as { definedScripts: typeof definedScripts };
  for (const defined of [built.definedScripts(), definedScripts()]) {
    for (const [command, lua] of defined)
      names.set(
        sha1(lua),
        command.replace(/^carrierSync/, '').replace(/^./, (c) => c.toLowerCase()),
      );
  }
  return names;
}

/**
 * A MONITOR argument back to its bytes: Redis writes each as `sdscatrepr` does (\\, \", \n, \r, \t,
 * \a, \b, \xHH); ioredis has undone only the \".
 */
function unrepr(text: string): Buffer {
  const bytes: number[] = [];
  const simple: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, '\\': 92, '"': 34 };
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      const next = text[i + 1]!;
      if (next === 'x' && /^[0-9a-f]{2}$/i.test(text.slice(i + 2, i + 4))) {
        bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
        i += 3;
        continue;
      }
      if (next in simple) {
        bytes.push(simple[next]!);
        i += 1;
        continue;
      }
    }
    bytes.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(bytes);
}

/** A script's first words: the first line of its header comment, or of its code. */
function firstLine(lua: string): string {
  const line = lua
    .replace(/^\s*--\[\[/, '')
    .split('\n')
    .map((l) => l.replace(/^\s*(--)?\s*/, '').trim())
    .find((l) => l !== '');
  return (line ?? '').slice(0, 60);
}

/**
 * Starts MONITOR on a connection of its own; every line is kept until `stop()`. A script
 * `scriptNames` does not know is named by its body's first line once an EVAL showed its body
 * (started before the daemon, it sees every script's first call), else by its SHA.
 */
export async function recordMonitor(url: string, names: ReadonlyMap<string, string>): Promise<Recorder> {
  const lines: MonitorLine[] = [];
  const learned = new Map<string, string>();
  let script: string | undefined;
  const monitor = await monitorLines(url, (time: string, args: string[], source: string) => {
    const command = (args[0] ?? '').toLowerCase();
    const at = Number(time) * 1000;
    if (source === 'lua') {
      lines.push({ at, source, name: command, script: script ?? '(no script)' });
      return;
    }
    if (command === 'evalsha' || command === 'eval') {
      const body = command === 'eval' ? unrepr(args[1] ?? '') : null;
      const sha = body !== null ? sha1(body) : (args[1] ?? '').toLowerCase();
      // A body seen once (ioredis sends EVAL with the body at a script's first call on a socket) names its SHA.
      if (body !== null && !names.has(sha) && !learned.has(sha)) learned.set(sha, `script "${firstLine(body.toString('utf8'))}"`);
      script = names.get(sha) ?? learned.get(sha) ?? `script ${sha.slice(0, 8)}`;
      lines.push({ at, source, name: `${command} ${script}`, script });
      return;
    }
    script = undefined;
    lines.push({ at, source, name: command });
  });
  // MONITOR answers OK before it feeds lines: wait for its first line of ours.
  const probe = new Redis(url, { maxRetriesPerRequest: null });
  try {
    const mark = `bench-monitor-${Date.now()}`;
    for (let i = 0; i < 200 && !lines.some((l) => l.name === 'echo'); i += 1) {
      await probe.echo(mark);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    probe.disconnect();
  }
  lines.length = 0;
  return {
    lines,
    async stop() {
      monitor.destroy();
    },
  };
}

/**
 * MONITOR on a socket of its own, read line by line. Not ioredis' `monitor()`: its connection
 * enters monitor mode only once the OK's promise has settled, so a line that arrives in the same
 * read as the OK — any busy Redis — meets an empty command queue ("Command queue state error", an
 * uncaught exception that failed a clean-clone test run). Each line goes to `onLine` split as
 * ioredis splits it: the time, the arguments (with `\"` undone) and the source (`lua` or ip:port).
 */
async function monitorLines(url: string, onLine: (time: string, args: string[], source: string) => void): Promise<Socket> {
  const target = new URL(url);
  const socket = createConnection({ host: target.hostname, port: Number(target.port || 6379) });
  await once(socket, 'connect');
  const password = decodeURIComponent(target.password);
  const user = decodeURIComponent(target.username);
  const auth = password === '' ? [] : user === '' ? ['AUTH', password] : ['AUTH', user, password];
  const request = (words: string[]): string => `*${words.length}\r\n${words.map((w) => `$${Buffer.byteLength(w)}\r\n${w}\r\n`).join('')}`;
  let pending = '';
  let oks = 0;
  const expectedOks = (auth.length > 0 ? 1 : 0) + 1;
  const started = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      let end: number;
      while ((end = pending.indexOf('\r\n')) >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (line.startsWith('-')) return reject(new Error(`MONITOR refused: ${line.slice(1)}`));
        if (oks < expectedOks) {
          if (line === '+OK') oks += 1;
          if (oks === expectedOks) resolve();
          continue;
        }
        const text = line.slice(1);
        const space = text.indexOf(' ');
        const quote = text.indexOf('"');
        const dbAndSource = text.slice(space + 2, quote - 2).split(' ');
        const args = text
          .slice(quote + 1, -1)
          .split('" "')
          .map((arg) => arg.replace(/\\"/g, '"'));
        onLine(text.slice(0, space), args, dbAndSource[1] ?? '');
      }
    });
  });
  socket.write((auth.length > 0 ? request(auth) : '') + request(['MONITOR']));
  await started;
  return socket;
}

export interface Tally {
  /** Top-level commands: requests on the wire (the issue's round trips). */
  topLevel: number;
  /** Commands run inside scripts. */
  inner: number;
  /** Runs of top-level commands of one connection with no other connection's between (an estimate of its writes: a pipeline or MULTI/EXEC is one). */
  bursts: number;
  /** Connections that sent anything. */
  connections: number;
  byTopLevel: Map<string, number>;
  byInner: Map<string, number>;
  /** Per script: its calls and the commands inside them, in all and by command. */
  byScript: Map<string, { calls: number; inner: number; commands: Map<string, number> }>;
}

export function tally(lines: readonly MonitorLine[]): Tally {
  const t: Tally = { topLevel: 0, inner: 0, bursts: 0, connections: 0, byTopLevel: new Map(), byInner: new Map(), byScript: new Map() };
  const add = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
  const sources = new Set<string>();
  let last = '';
  for (const line of lines) {
    if (line.source === 'lua') {
      t.inner += 1;
      add(t.byInner, line.name);
      const s = t.byScript.get(line.script ?? '') ?? { calls: 0, inner: 0, commands: new Map() };
      s.inner += 1;
      add(s.commands, line.name);
      t.byScript.set(line.script ?? '', s);
      continue;
    }
    t.topLevel += 1;
    add(t.byTopLevel, line.name);
    sources.add(line.source);
    if (line.source !== last) t.bursts += 1;
    last = line.source;
    if (line.script !== undefined) {
      const s = t.byScript.get(line.script) ?? { calls: 0, inner: 0, commands: new Map() };
      s.calls += 1;
      t.byScript.set(line.script, s);
    }
  }
  t.connections = sources.size;
  return t;
}

/** `name 3.2, name 1.1` per item, largest first, those under `min` an item left out. */
export function perItem(map: ReadonlyMap<string, number>, items: number, min = 0.05): string {
  return (
    [...map.entries()]
      .map(([k, v]): [string, number] => [k, v / items])
      .filter(([, v]) => v >= min)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ') || 'none'
  );
}
