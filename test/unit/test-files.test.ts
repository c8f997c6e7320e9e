// Every test file that runs workflows replays what it ran against the current bundle, with a
// count (expectReplayed), so a change that breaks determinism cannot pass unnoticed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const testRoot = join(__dirname, '..', '..', '..', 'test');
const RUNS_WORKFLOWS =
  /withControlWorker\(|Scenario\.create\(|workflowTestEnv\(|runControlWorker\(|startControlProcess\(|useRealCluster\(/;

const files = ['integration', 'scenario', 'workflow', 'e2e'].flatMap((dir) =>
  readdirSync(join(testRoot, dir))
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => join(dir, name)),
);

test('the workflow-running test files are found', () => {
  const running = files.filter((f) => RUNS_WORKFLOWS.test(readFileSync(join(testRoot, f), 'utf8')));
  expect(running.length).toBeGreaterThanOrEqual(20);
});

test.each(files)('%s replays its histories if it runs workflows', (file) => {
  const text = readFileSync(join(testRoot, file), 'utf8');
  if (!RUNS_WORKFLOWS.test(text)) return;
  expect(text).toMatch(/await expectReplayed\(/);
});
