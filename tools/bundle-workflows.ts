// Builds the workflow bundle once, so workers start without running webpack.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/bundle';

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(__dirname, '..', 'workflows', 'index.js'),
    logger: {
      log: () => undefined,
      trace: () => undefined,
      debug: () => undefined,
      info: () => undefined,
      warn: console.warn,
      error: console.error,
    },
  });
  writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  console.log(`netlease: workflow bundle written (${(code.length / 1024).toFixed(0)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
