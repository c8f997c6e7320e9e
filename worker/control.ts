// Entry point: node dist/worker/control.js --config <file>   (or NETLEASE_CONFIG=<file>)
import { configPath, loadConfigFile } from './config-file';
import { createControlWorker } from './control-worker';

async function main(): Promise<void> {
  const config = loadConfigFile(configPath(process.argv, 'NETLEASE_CONFIG', 'control'));
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
