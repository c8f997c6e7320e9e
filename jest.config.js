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
  // A fresh worker process per test file: @kubernetes/client-node is an ES module, and jest's
  // vm-modules loader hangs when a second test file in the same worker imports it again.
  workerIdleMemoryLimit: '1MB',
  transform: {},
  watchman: false,
};
