// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const prettier = require('eslint-config-prettier');
const { builtinModules } = require('node:module');

// Workflow and domain code is bundled into Temporal's deterministic sandbox: no Node built-ins,
// no clients, no clocks or randomness of its own, and activities only as types.
const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const deterministic = {
  'no-restricted-imports': [
    'error',
    {
      paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins are not deterministic.' })),
      patterns: [
        {
          group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@kubernetes/*'],
          message: 'Not allowed in deterministic code.',
        },
        {
          group: ['**/activities/**', '**/activities'],
          allowTypeImports: true,
          message: 'Workflows import activities as types only.',
        },
        {
          group: ['**/worker/**', '**/cni/**', '**/tools/**', '**/observability/**'],
          message: 'Not allowed in deterministic code.',
        },
      ],
    },
  ],
  'no-restricted-globals': [
    'error',
    { name: 'process', message: 'Not deterministic.' },
    { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
    { name: 'setInterval', message: 'Not deterministic.' },
    { name: 'require', message: 'Use import.' },
  ],
  '@typescript-eslint/consistent-type-imports': 'error',
};

// Folder boundaries (test/unit/architecture checks the same, and that there are no circles):
// kernel work, Kubernetes reading and Temporal client helpers stand below activities and the CNI.
const layer = (forbidden) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          // The project's folders, not packages of the same name (@temporalio/worker).
          group: [...forbidden.flatMap((folder) => [`**/${folder}/**`, `**/${folder}`]), '!@*/**'],
          message: 'This folder must not depend on that layer (see test/unit/architecture).',
        },
      ],
    },
  ],
});

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.netlease/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: 'error',
    },
  },
  { files: ['domain/**/*.ts', 'workflows/**/*.ts'], rules: deterministic },
  {
    files: ['kernel/**/*.ts'],
    rules: layer(['workflows', 'activities', 'kubernetes', 'temporal', 'worker', 'cni', 'tools']),
  },
  {
    files: ['kubernetes/**/*.ts'],
    rules: layer(['workflows', 'activities', 'kernel', 'temporal', 'worker', 'cni', 'tools']),
  },
  {
    files: ['temporal/**/*.ts'],
    rules: layer(['activities', 'kernel', 'kubernetes', 'worker', 'cni', 'tools']),
  },
  { files: ['activities/**/*.ts'], rules: layer(['worker', 'cni', 'tools']) },
  { files: ['cni/**/*.ts'], rules: layer(['activities', 'worker', 'tools']) },
  // Logs and metrics: used by every process-side layer, importing none of them.
  {
    files: ['observability/**/*.ts'],
    rules: layer(['workflows', 'activities', 'kernel', 'kubernetes', 'temporal', 'worker', 'cni', 'tools']),
  },
  // The operator's CLI: domain, workflows/*-messages, temporal, kubernetes, worker/config-file.
  {
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                ...['activities', 'kernel', 'cni', 'tools'].flatMap((f) => [`**/${f}/**`, `**/${f}`]),
                '**/workflows/*',
                '!**/workflows/*-messages',
                '**/worker/*',
                '!**/worker/config-file',
                '!@*/**',
              ],
              message:
                'The CLI imports domain, workflows/*-messages, temporal, kubernetes and worker/config-file only.',
            },
          ],
        },
      ],
    },
  },
  // Workflows get replay-safe Date and Math.random from the sandbox; domain code takes time as input.
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Not deterministic.' },
        { object: 'Date', property: 'now', message: 'Take the time as an argument.' },
      ],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly',
        console: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
