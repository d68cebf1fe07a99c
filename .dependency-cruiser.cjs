/**
 * STYLE.md §1: no import circles in src/, type-only imports included (a type import ties two
 * modules' ideas as much as a value import). `npm run check` runs it (`npm run lint:cycles`).
 * The folder table for the rest of src/ (who may import whom) is in test/eslint.config.mjs; the
 * four rooms of what lives in Redis (README "Inside") are layered here:
 *   queue → gate → journey → store  (a room imports only rooms to its right)
 * with two precise rules on top: the gate writes journey steps but never reads them, and it takes
 * only the job types from queue/payloads.ts (type-only), never the queues themselves.
 */
const room = (name) => `^src/${name}/`;

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'STYLE.md §1: data flows one way; a circle means one idea has no single owner.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'store-is-the-floor',
      severity: 'error',
      comment: 'store/ is Redis itself: it imports none of the rooms above it.',
      from: { path: room('store') },
      to: { path: ['^src/(journey|gate|queue)/'] },
    },
    {
      name: 'journey-stands-on-store',
      severity: 'error',
      comment: 'journey/ (history) is written by everyone and imports only store/.',
      from: { path: room('journey') },
      to: { path: ['^src/(gate|queue)/'] },
    },
    {
      name: 'gate-below-queue',
      severity: 'error',
      comment: 'The gate decides sends; the queues proper sit above it (enqueue records claims). Only the job types cross, type-only.',
      from: { path: room('gate') },
      to: { path: '^src/queue/', pathNot: '^src/queue/payloads\\.ts$' },
    },
    {
      name: 'gate-takes-only-types-from-queue',
      severity: 'error',
      comment: 'The gate may name the job types of queue/payloads.ts, never run its code.',
      from: { path: room('gate') },
      to: { path: '^src/queue/payloads\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'gate-never-reads-history',
      severity: 'error',
      comment: 'The gate writes journey steps; reading them is for history, ops and the CLI.',
      from: { path: room('gate') },
      to: { path: '^src/journey/journey-read\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
