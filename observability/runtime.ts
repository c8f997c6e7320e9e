// The Temporal SDK runtime of a netlease process: its logger writes our JSON lines, Core's own
// log lines are forwarded to it, and with metrics on Core exports its temporal_* metrics on a
// loopback port that /metrics merges in. Must run before any worker or native connection.
import { Runtime } from '@temporalio/worker';
import { sdkLogger, type Log } from './log';
import { freePort } from './ports';

export interface InstalledRuntime {
  /** Where Core serves its Prometheus metrics, when metrics are on. */
  temporalMetricsUrl?: string;
}

export async function installRuntime(log: Log, metrics: boolean): Promise<InstalledRuntime> {
  const port = metrics ? await freePort() : undefined;
  Runtime.install({
    logger: sdkLogger(log),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(port === undefined
        ? {}
        : {
            metrics: {
              // Names as Prometheus expects them (promtool check metrics passes): counters end in
              // _total, durations are in seconds and say so.
              prometheus: {
                bindAddress: `127.0.0.1:${port}`,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
                unitSuffix: true,
              },
            },
          }),
    },
  });
  return port === undefined ? {} : { temporalMetricsUrl: `http://127.0.0.1:${port}/metrics` };
}
