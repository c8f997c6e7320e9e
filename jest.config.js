// Tests are compiled by `tsc` (part of bootstrap) and run as plain JS: no transform, no ESM shims.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/dist/test'],
  testMatch: ['**/*.test.js'],
  globalSetup: '<rootDir>/dist/test/harness/global-setup.js',
  globalTeardown: '<rootDir>/dist/test/harness/global-teardown.js',
  testTimeout: 120000,
  maxWorkers: 2,
  transform: {},
  watchman: false,
};
