/**
 * Our Lua scripts, loaded one way: as ioredis custom commands (`defineCommand`), defined on a
 * connection the first time a script runs on it. ioredis then sends the body once per socket and
 * the SHA after (EVALSHA), sends it again after a NOSCRIPT (a Redis restart), and runs it in
 * pipelines — what BullMQ does with its own scripts. A script is called with its keys and its
 * arguments as two lists; the key count travels as the first argument (no fixed `numberOfKeys`),
 * so one definition serves calls of any shape.
 *
 * On an auto-pipelining connection (store/redis.ts) the commands of one turn of the event loop
 * gather in a pipeline made at the first of them, which copies the connection's custom commands
 * when it is made: a script defined later in that turn is copied into it too (`definedOn`), else
 * ioredis keeps the call's callback without its command and the pipeline's replies come out one
 * short ("results[i] is not iterable").
 *
 * Every script starts with a header — KEYS, ARGV and what it returns — and names its keys and
 * arguments as locals before using them (as bullmq's `moveToFinished-14.lua` does).
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisConnection } from './redis.js';

export interface ScriptCall {
  keys: readonly string[];
  args: ReadonlyArray<string | number | Buffer>;
}

export type Script = ((redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>) => Promise<unknown>) & {
  /** The command's name on a connection (unique per script). */
  readonly commandName: string;
  /**
   * Runs the script once per call, all in one pipeline (one round trip; every key of a deployment
   * shares one hash slot). Each call settles on its own: an error fails only its own result.
   */
  many(redis: RedisConnection, calls: readonly ScriptCall[]): Promise<Array<{ error: Error } | { value: unknown }>>;
  /** Defines the command on `redis`: a pipeline or MULTI made from it afterwards can `queue` it. */
  define(redis: RedisConnection): void;
  /** Appends one call to `chain` (of a connection the script was `define`d on before the chain was made). */
  queue(chain: ChainableCommander, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>): void;
};

type Invoke = (numberOfKeys: number, ...keysAndArgs: Array<string | number | Buffer>) => unknown;

const defined = new Map<string, string>();

/**
 * Every script defined so far in this process: command name → Lua body (ioredis sends it as
 * EVALSHA of the body's SHA-1). For the round-trip bench, which names the scripts Redis' MONITOR
 * shows by their SHA; nothing in the daemon reads it.
 */
export function definedScripts(): ReadonlyMap<string, string> {
  return defined;
}

/** The pipelines ioredis' auto-pipelining is gathering on a connection (ioredis 5's own field). */
type AutoPipelines = Map<string, Record<string, unknown> & { _shaToScript: Record<string, unknown> }>;

/** Defines the command on `target`, and on the auto-pipelines it gathers this turn (made before it). */
function definedOn(target: RedisConnection, commandName: string, lua: string, isUrgent: boolean): void {
  target.defineCommand(commandName, { lua });
  if (isUrgent) target.options.autoPipeliningIgnoredCommands = [...(target.options.autoPipeliningIgnoredCommands ?? []), commandName];
  const own = target as unknown as Record<string, unknown> & { _autoPipelines?: AutoPipelines };
  const script = (target.scriptsSet as Record<string, { sha: string }>)[commandName]!;
  for (const pipeline of own._autoPipelines?.values() ?? []) {
    pipeline[commandName] = own[commandName];
    pipeline[`${commandName}Buffer`] = own[`${commandName}Buffer`];
    pipeline._shaToScript[script.sha] = script;
  }
}

export interface ScriptOptions {
  /**
   * Sent at once, never held in an auto-pipeline: a call whose reply has a deadline (the spool
   * lease's renewal) must not wait for the turn's batch, nor for the batch still in flight. Under
   * a load average of 20 the large drop's holder lost its lease 15 times in one run with its
   * renewals auto-pipelined (BENCHMARKS.md, issue 29).
   */
  isUrgent?: boolean;
}

/** `name`: a camelCase name unique among our scripts (it becomes `redis[name]`). */
export function defineScript(name: string, lua: string, options: ScriptOptions = {}): Script {
  const commandName = `carrierSync${name[0]?.toUpperCase() ?? ''}${name.slice(1)}`;
  if (defined.has(commandName) && defined.get(commandName) !== lua) throw new Error(`two scripts named ${name}`);
  defined.set(commandName, lua);
  const commandOf = (target: RedisConnection): Invoke => {
    if (!(commandName in target.scriptsSet)) definedOn(target, commandName, lua, options.isUrgent === true);
    return (target as unknown as Record<string, Invoke>)[commandName]!;
  };
  const run = async (redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>): Promise<unknown> =>
    commandOf(redis).call(redis, keys.length, ...keys, ...args);
  const many: Script['many'] = async (redis, calls) => {
    commandOf(redis);
    const pipeline = redis.pipeline();
    const invoke = (pipeline as unknown as Record<string, Invoke>)[commandName]!;
    for (const { keys, args } of calls) invoke.call(pipeline, keys.length, ...keys, ...args);
    const replies = (await pipeline.exec()) ?? [];
    return calls.map((_, i) => {
      const [error, value] = replies[i] ?? [new Error('no reply in the pipeline'), null];
      return error === null ? { value } : { error };
    });
  };
  const define = (redis: RedisConnection): void => void commandOf(redis);
  const queue: Script['queue'] = (chain, keys, args) => {
    const invoke = (chain as unknown as Record<string, Invoke | undefined>)[commandName];
    if (invoke === undefined) throw new Error(`script ${name} was not defined on this chain's connection before the chain was made`);
    invoke.call(chain, keys.length, ...keys, ...args);
  };
  return Object.assign(run, { commandName, many, define, queue });
}
