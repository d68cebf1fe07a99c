/**
 * STYLE.md §1: no import circles in src/, type-only imports included (a type import ties two
 * modules' ideas as much as a value import). `npm run check` runs it (`npm run lint:cycles`).
 * The folder table for the rest of src/ (who may import whom) is in test/eslint.config.mjs; the
 * four rooms of what lives in Redis (README "Inside") are layered here:
 *   queue → gate → journey → store  (a room imports only rooms to its right)
 * with one precise rule on top: the gate writes journey steps but never reads them. What travels in
 * a job (store/payloads.ts) sits on the floor, so the queues and the gate both look down at it and
 * no arrow runs back up (issue 35: the gate used to take the job types from queue/).
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
      comment:
        'The gate decides sends; the queues proper sit above it (enqueue records claims). Nothing of queue/ crosses down, not even a type: the job types are store/payloads.ts.',
      from: { path: room('gate') },
      to: { path: '^src/queue/' },
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
