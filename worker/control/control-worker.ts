// The control worker: lease, node, pool and reconcile workflows plus the cluster-side activities;
// with a `kubernetes` section also the node and pod watchers and the reconciler schedule, and with
// `kubernetes.poolObjects` the NetleasePool objects (the pools, and their status).
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createControlActivities } from '../../activities/control';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { StatefulSetReader } from '../../kubernetes/statefulsets';
import { connectKube } from '../../kubernetes/kube';
import type { NetleaseConfig } from '../../domain/config';
import { clientOn, connectWorkerConnectionWhenReachable, whenReachable } from '../../temporal/connection';
import { configurePoolWorkflows, openPoolWorkflows } from '../../temporal/pools';
import { errorMessage, silentLog, type Log } from '../../observability/log';
import { prebuiltBundle } from './bundle';
import { configurePoolsWhileRunning } from './pool-configuration';
import { followPoolObjects, type PoolObjects } from './pool-objects';
import { failpointSinks } from './failpoint-sinks';
import { startMetricsSampler, type MetricsSampler } from './metrics-sampler';
import { ensureReconcileSchedule, triggerReconcile } from './reconcile-schedule';
import { startWatches, type Watches } from './watchers/watches';

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

/**
 * A lease's workflow task holds its slot while its produce or return runs as a local activity
 * (workflows/lease/addresses), waiting on the node workflow, whose task needs a slot of its own: the
 * SDK's 40 would let 40 leases produced at once starve their node workflows until the local
 * activities give up. Slots cost little (the workflow thread runs one activation at a time); the
 * SDK caps them at the cache size.
 */
const WORKFLOW_TASK_SLOTS = 200;
const workflowTaskSlots = (cached: number): number => Math.min(WORKFLOW_TASK_SLOTS, cached);

export async function createControlWorker(
  config: NetleaseConfig,
  log: Log = silentLog(),
): Promise<ControlWorker> {
  const { namespace, taskQueue } = config.temporal;
  // One connection: the Worker polls on it and every call of this process goes through it.
  const unreachable = (step: string) => (err: unknown, retryInMs: number) =>
    log.warn({ step, error: errorMessage(err), retryInMs }, 'Temporal is not reachable; trying again');
  const connection = await connectWorkerConnectionWhenReachable(config.temporal, unreachable('connect'));
  const client = clientOn(connection, config.temporal);
  const { kubernetes } = config;
  const kube = kubernetes ? await connectKube(kubernetes.kubeconfig, kubernetes.timeouts) : undefined;
  const reader = kube ? new ClusterReader(kube.core, kube.timeouts) : undefined;
  const statefulSets = kube ? new StatefulSetReader(kube) : undefined;
  // Before any ADD: the node agents refuse a pool with no open pool workflow (temporal/pools).
  await whenReachable(() => openPoolWorkflows(client, config), unreachable('open the pools'));
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: prebuiltBundle(),
    activities: createControlActivities({ client, config, reader, statefulSets }),
    maxCachedWorkflows: config.maxCachedWorkflows,
    maxConcurrentWorkflowTaskExecutions: workflowTaskSlots(config.maxCachedWorkflows),
    sinks: failpointSinks(),
    // Temporal's own handling of SIGINT/SIGTERM: stop polling, finish in-flight tasks, then resolve run().
    shutdownGraceTime: '10 seconds',
  });
  let watches: Watches | undefined;
  let sampler: MetricsSampler | undefined;
  let poolObjects: PoolObjects | undefined;
  const quiesce = async () => {
    poolObjects?.stop();
    await watches?.stop();
    await sampler?.stop();
  };
  return {
    worker,
    client,
    reader,
    async run() {
      const running = worker.run();
      const stopPolling = () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      };
      const stop = async (err: unknown): Promise<never> => {
        stopPolling();
        await running;
        throw err;
      };
      // The pools' own check of the config: a change under handed-out blocks stops the worker.
      const configuring = configurePoolsWhileRunning({
        configure: () => configurePoolWorkflows(client, config),
        running: () => worker.getState() === 'RUNNING',
        log,
      });
      await configuring.firstTry.catch(stop);
      // A refusal later stops the worker too; a configure still asking when the worker stops is
      // not waited for (its update needs this worker, which no longer polls).
      let refusal: { err: unknown } | undefined;
      void configuring.done.catch((err: unknown) => {
        refusal = { err };
        stopPolling();
      });
      if (kube && config.kubernetes?.poolObjects) {
        const statusIntervalSeconds = config.kubernetes.poolStatusIntervalSeconds;
        poolObjects = followPoolObjects({ kube, client, config, statusIntervalSeconds, log });
      }
      if (kube && reader && config.kubernetes) {
        const interval = config.kubernetes.reconcileIntervalSeconds;
        await whenReachable(
          () => ensureReconcileSchedule(client, config, interval),
          unreachable('the reconcile schedule'),
        );
        const site = { kube, reader, client, taskQueue, settings: config.kubernetes, log };
        if (config.kubernetes.watch) watches = startWatches(site);
        // No watch: the reconciler looks at once.
        else await whenReachable(() => triggerReconcile(client, taskQueue), unreachable('reconcile now'));
      }
      // NetleasePools' use is sampled with their status; the config file's pools by the sampler.
      const poolsOfFile = config.kubernetes?.poolObjects ? undefined : () => config.pools;
      if (config.metrics)
        sampler = startMetricsSampler(
          client,
          taskQueue,
          config.metrics.sampleIntervalSeconds,
          log,
          poolsOfFile,
        );
      await running;
      if (refusal) throw refusal.err;
    },
    quiesce,
    async close() {
      await quiesce();
      await connection.close();
    },
  };
}
