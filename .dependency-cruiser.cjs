/**
 * STYLE.md §1: no import circles in src/, type-only imports included (a type import ties two
 * modules' ideas as much as a value import). `npm run check` runs it (`npm run lint:cycles`).
 * The import table (who may import whom) is in test/eslint.config.mjs.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'STYLE.md §1: data flows one way; a circle means one idea has no single owner.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
