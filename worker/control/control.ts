// Entry point: node dist/worker/control/control.js --config <file>   (or NETLEASE_CONFIG=<file>)
// Logs are JSON lines on stdout; with `metrics` in the config, GET /metrics on metrics.host:port.
import { controlRegistry } from '../../observability/control-metrics';
import { createLog, errorMessage } from '../../observability/log';
import { serveMetrics, type MetricsServer } from '../../observability/metrics-server';
import { installRuntime } from '../../observability/runtime';
import { configPath, loadConfigFile } from '../config-file';
import { createControlWorker } from './control-worker';

const bootLog = createLog('control');

async function main(): Promise<void> {
  const config = loadConfigFile(configPath(process.argv, 'NETLEASE_CONFIG', 'control'));
  const log = createLog('control', config.logLevel);
  const runtime = await installRuntime(log, config.metrics !== undefined);
  const control = await createControlWorker(config, log);
  let metrics: MetricsServer | undefined;
  if (config.metrics) {
    metrics = await serveMetrics({ ...config.metrics, registry: controlRegistry, log, ...runtime });
    log.info({ host: config.metrics.host, port: metrics.port }, 'metrics on GET /metrics');
  }
  log.info(
    { taskQueue: config.temporal.taskQueue, temporal: config.temporal.address },
    'control worker started',
  );
  // On SIGINT/SIGTERM the SDK drains the worker; the watchers and the sampler stop at once (a
  // sample while it drains would query workflows no worker answers any more).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void control.quiesce());
  await control.run();
  await control.close();
  await metrics?.close();
  log.info('control worker stopped');
}

main().catch((err: unknown) => {
  // The stack says which step failed (the soak's seed 795915740: a describe, from where?).
  const stack = err instanceof Error ? err.stack : undefined;
  const cause = err instanceof Error && err.cause !== undefined ? errorMessage(err.cause) : undefined;
  bootLog.error({ error: errorMessage(err), cause, stack }, 'control worker failed');
  process.exit(1);
});
