// Lint: typed rules for promises, plus the import table of STYLE.md §1 (who may import whom).
// Leaves anyone may import: errors.ts, log.ts, clock.ts and i18n/ (the message catalogs).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const only = (allowed) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          regex: `^(?:\\.\\./)+(?!(${allowed.join('|')})/|i18n/|errors\\.js$|log\\.js$|clock\\.js$)[a-z0-9-]+/`,
          message: 'STYLE.md §1: this folder may not import that one (data flows one way).',
        },
      ],
    },
  ],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'var/**', 'spool/**', 'test-artifacts/**', 'bench-reports/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: ['./test/tsconfig.json'], tsconfigRootDir: `${import.meta.dirname}/..` },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  { files: ['src/validate/**/*.ts', 'src/api/**/*.ts', 'src/sandbox/**/*.ts'], rules: only(['config', '__none__']) },
  // The four rooms of what lives in Redis import one another only downwards: .dependency-cruiser.cjs.
  {
    files: ['src/queue/**/*.ts', 'src/gate/**/*.ts', 'src/journey/**/*.ts', 'src/store/**/*.ts'],
    rules: only(['config', 'queue', 'gate', 'journey', 'store']),
  },
  { files: ['src/spool/**/*.ts'], rules: only(['config', 'validate', 'queue', 'gate', 'journey', 'store']) },
  { files: ['src/push/**/*.ts'], rules: only(['config', 'api', 'queue', 'gate', 'journey', 'store']) },
  { files: ['src/outcome/**/*.ts'], rules: only(['config', 'spool', 'queue', 'gate', 'journey', 'store']) },
  { files: ['src/ops/**/*.ts'], rules: only(['config', 'validate', 'queue', 'gate', 'journey', 'store']) },
  { files: ['src/notify/**/*.ts'], rules: only(['config', 'queue', 'gate', 'journey', 'store']) },
  {
    files: ['src/config/**/*.ts'],
    rules: only(['config', '__none__']),
  },
  // STYLE.md §3: functions under ~80 lines; a longer one is named steps over a small state object.
  // Blank lines and comments do not count (the house writes the reason above the code). src/ only:
  // a test's describe() is one function holding its cases, a long narrative by design, and splitting
  // a scenario across helpers hides the order it asserts.
  {
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
);
