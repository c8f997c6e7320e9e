// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const prettier = require('eslint-config-prettier');
const { builtinModules } = require('node:module');
const { dirname, join, relative } = require('node:path').posix;
const { forbiddenImport } = require('./layers');

// Workflow and domain code is bundled into Temporal's deterministic sandbox: no Node built-ins,
// no clients, no clocks or randomness of its own (which folders they import: layers.js).
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

// Folder boundaries, from the table in layers.js (test/unit/architecture checks the same table,
// and that there are no circles). An import's path is resolved to its module, as the test does.
/** @type {import('eslint').Rule.RuleModule} */
const layers = {
  meta: { type: 'problem', docs: { description: 'imports across layers (layers.js)' }, schema: [] },
  create(context) {
    const from = relative(__dirname, context.filename).replace(/\.ts$/, '');
    const check = (node, source, typeOnly) => {
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
      const to = join(dirname(from), source.value);
      const why = forbiddenImport(from, to, typeOnly);
      if (why) context.report({ node, message: `${from} must not import ${to}: ${why} (layers.js).` });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source, node.importKind === 'type'),
      ExportNamedDeclaration: (node) => check(node, node.source, node.exportKind === 'type'),
      ExportAllDeclaration: (node) => check(node, node.source, node.exportKind === 'type'),
      ImportExpression: (node) => check(node, node.source, false),
    };
  },
};

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
  { files: ['**/*.ts'], plugins: { netlease: { rules: { layers } } }, rules: { 'netlease/layers': 'error' } },
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
