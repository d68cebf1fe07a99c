/**
 * The BullMQ classes carrier-sync uses, loaded from BullMQ's own files rather than its index: the
 * index also loads the PostgreSQL, Bun, node-redis and Valkey GLIDE backends, flows and sandboxed
 * processors (~70 more modules, ~1.5 MB of an idle daemon's heap; issue 29). They are the files the
 * index re-exports, so the classes are the same ones (bull-board, which loads the index, sees the
 * same Queue). Types come from the package as usual.
 */
import { createRequire, Module } from 'node:module';
import type * as Bull from 'bullmq';

const require = createRequire(import.meta.url);
const classes = (file: string): typeof Bull => require(`bullmq/dist/cjs/classes/${file}.js`) as typeof Bull;

/**
 * BullMQ's job schedulers parse cron patterns with cron-parser, which brings Luxon: ~360 KB of
 * source, ~0.9 MB of an idle process's heap, loaded by Queue and Worker at start though only a
 * scheduler role's `upsertJobScheduler` uses it (issue 29). BullMQ's job-scheduler.js names it once,
 * `require("cron-parser")`, at its top; its two uses read `CronExpressionParser` when a pattern is
 * parsed. So the module BullMQ's require finds in Node's module cache is a stand-in whose every
 * property read loads the real cron-parser (once) and answers from it: nothing changes but when it
 * loads (test/integration/bullmq-lazy-cron.test.ts).
 */
function deferCronParser(): void {
  const path = createRequire(require.resolve('bullmq/dist/cjs/classes/job-scheduler.js')).resolve('cron-parser');
  if (require.cache[path] !== undefined) return;
  let real: Record<string | symbol, unknown> | undefined;
  const load = (): Record<string | symbol, unknown> => {
    if (real === undefined) {
      delete require.cache[path];
      real = require(path) as Record<string | symbol, unknown>;
    }
    return real;
  };
  const standIn = new Module(path);
  standIn.filename = path;
  standIn.loaded = true;
  standIn.exports = new Proxy(
    {},
    {
      get: (_, name) => load()[name],
      has: (_, name) => name in load(),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_, name) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(load(), name);
        return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
      },
    },
  );
  require.cache[path] = standIn;
}

deferCronParser();

export const { Queue } = classes('queue');
export const { Worker } = classes('worker');
export const { DelayedError, UnrecoverableError } = classes('errors/index');

/** BullMQ's own default for a job's data (`any`), so that `Queue` alone means what it means in BullMQ. */
type AnyData = Bull.Queue extends Bull.Queue<infer Data> ? Data : never;
export type Queue<Data = AnyData> = Bull.Queue<Data>;
export type Worker<Data = AnyData> = Bull.Worker<Data>;
