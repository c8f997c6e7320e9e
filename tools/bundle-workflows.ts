// Builds the workflow bundle once, so workers start without running webpack.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/control/bundle';

/** The compiled modules that share one zod between the workflows of a V8 context (see there). */
const SHARED_ZOD = join(__dirname, '..', 'worker', 'control', 'sandbox', 'shared-zod.js');
const ZOD_STAND_IN = join(__dirname, '..', 'worker', 'control', 'sandbox', 'zod.js');

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(__dirname, '..', 'workflows', 'index.js'),
    // Note the history at each recorded job: when to continue-as-new (workflows/continue-as-new);
    // and the resets the history passed (workflows/resets).
    workflowInterceptorModules: ['continue-as-new.js', 'resets.js'].map((m) =>
      join(__dirname, '..', 'workflows', m),
    ),
    // Loaded once when the worker sets up its V8 context, shared by every workflow in it.
    preloadModules: [SHARED_ZOD],
    webpackConfigHook: (config) => {
      // `require('zod')` from any bundled module but the holder itself gets the shared zod.
      const rules = config.module?.rules ?? [];
      rules.push({ test: /\.c?js$/, exclude: [SHARED_ZOD], resolve: { alias: { zod$: ZOD_STAND_IN } } });
      // The SDK wants an inline source map (it maps workflow stack traces through it), but not the
      // sources inside it: the text of every bundled file and of the SDK's own .ts was 2.3 MB of
      // the 4.5 MB bundle, parsed and held by each worker (about 30 MiB of RSS). Stack traces still
      // name the .ts file, line and column; only showStackTraceSources (off) would read the text.
      return { ...config, devtool: 'inline-nosources-source-map', module: { ...config.module, rules } };
    },
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
