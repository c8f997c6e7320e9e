// Entry point: node dist/worker/control.js --config <file>   (or NETLEASE_CONFIG=<file>)
import { loadConfigFile } from './config-file';
import { createControlWorker } from './control-worker';

function configPath(argv: string[]): string {
  const flag = argv.indexOf('--config');
  const path = flag >= 0 ? argv[flag + 1] : process.env.NETLEASE_CONFIG;
  if (!path) throw new Error('usage: control --config <netlease.yaml> (or set NETLEASE_CONFIG)');
  return path;
}

async function main(): Promise<void> {
  const config = loadConfigFile(configPath(process.argv));
  const control = await createControlWorker(config);
  console.log(
    `netlease control worker: task queue ${config.temporal.taskQueue} on ${config.temporal.address}`,
  );
  await control.run();
  await control.close();
  console.log('netlease control worker: stopped');
}

main().catch((err: unknown) => {
  console.error(`netlease control worker: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
