/**
 * The BullMQ classes carrier-sync uses, loaded from BullMQ's own files rather than its index: the
 * index also loads the PostgreSQL, Bun, node-redis and Valkey GLIDE backends, flows and sandboxed
 * processors (~70 more modules, ~1.5 MB of an idle daemon's heap; issue 29). They are the files the
 * index re-exports, so the classes are the same ones (bull-board, which loads the index, sees the
 * same Queue). Types come from the package as usual.
 */
import { createRequire } from 'node:module';
import type * as Bull from 'bullmq';

const require = createRequire(import.meta.url);
const classes = (file: string): typeof Bull => require(`bullmq/dist/cjs/classes/${file}.js`) as typeof Bull;

export const { Queue } = classes('queue');
export const { Worker } = classes('worker');
export const { DelayedError, UnrecoverableError } = classes('errors/index');

/** BullMQ's own default for a job's data (`any`), so that `Queue` alone means what it means in BullMQ. */
type AnyData = Bull.Queue extends Bull.Queue<infer Data> ? Data : never;
export type Queue<Data = AnyData> = Bull.Queue<Data>;
export type Worker<Data = AnyData> = Bull.Worker<Data>;
