// The control worker: lease, node, pool and reconcile workflows plus the cluster-side activities;
// with a `kubernetes` section also the node and pod watchers and the reconciler schedule.
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createControlActivities } from '../../activities/control';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { connectKube } from '../../kubernetes/kube';
import type { NetleaseConfig } from '../../domain/config';
import { connectClient, connectWorkerConnection } from '../../temporal/connection';
import { ensurePoolWorkflows } from '../../temporal/pools';
import { errorMessage, silentLog, type Log } from '../../observability/log';
import { prebuiltBundle } from './bundle';
import { startMetricsSampler, type MetricsSampler } from './metrics-sampler';
import { ensureReconcileSchedule } from './reconcile-schedule';
import { NodeEvents } from './watchers/node-events';
import { PodEvents } from './watchers/pod-events';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';

export interface ControlWorker {
  worker: Worker;
  client: Client;
  reader?: ClusterReader;
  /** Runs the worker; watchers and the schedule start with it. */
  run(): Promise<void>;
  /** Stops the watchers and the metrics sampler (the worker drains on its own). */
  quiesce(): Promise<void>;
  close(): Promise<void>;
}

export async function createControlWorker(
  config: NetleaseConfig,
  log: Log = silentLog(),
): Promise<ControlWorker> {
  const { namespace, taskQueue } = config.temporal;
  const nativeConnection = await connectWorkerConnection(config.temporal);
  const client = await connectClient(config.temporal);
  const kube = config.kubernetes ? await connectKube(config.kubernetes.kubeconfig) : undefined;
  const reader = kube ? new ClusterReader(kube.core) : undefined;
  // Before any ADD: the node agents refuse a pool with no open pool workflow (temporal/pools).
  await ensurePoolWorkflows(client, config);
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue,
    workflowBundle: prebuiltBundle(),
    activities: createControlActivities({ client, config, reader }),
    maxCachedWorkflows: config.maxCachedWorkflows,
    // Temporal's own handling of SIGINT/SIGTERM: stop polling, finish in-flight tasks, then resolve run().
    shutdownGraceTime: '10 seconds',
  });
  const watches: WatchLoop[] = [];
  let sampler: MetricsSampler | undefined;
  const reportFor = (resource: string) => (err: unknown) =>
    log.warn({ watch: resource, error: errorMessage(err) }, 'watch error; reopening');
  const quiesce = async () => {
    for (const watch of watches) watch.stop();
    await sampler?.stop();
  };
  return {
    worker,
    client,
    reader,
    async run() {
      const running = worker.run();
      if (kube && reader && config.kubernetes) {
        if (config.kubernetes.watch) {
          const pods = new PodEvents(reader, client, taskQueue);
          const nodes = new NodeEvents(reader, client);
          const options = { concurrency: config.kubernetes.watchConcurrency };
          const watch = (path: string, handle: (t: string, o: unknown) => Promise<unknown>, name: string) =>
            watches.push(watchForever(kube, path, handle, reportFor(name), options));
          watch('/api/v1/nodes', (t, o) => nodes.handle(t, o), 'nodes');
          watch('/api/v1/pods', (t, o) => pods.handle(t, o), 'pods');
        }
        await ensureReconcileSchedule(client, config, config.kubernetes.reconcileIntervalSeconds);
      }
      if (config.metrics)
        sampler = startMetricsSampler(client, taskQueue, config.metrics.sampleIntervalSeconds, log);
      await running;
    },
    quiesce,
    async close() {
      await quiesce();
      await client.connection.close();
      await nativeConnection.close();
    },
  };
}
