// A test's local cluster with one real node (tools/cluster): the file's Temporal task queue, a
// control worker watching it, and the node agent as its own process, started once its CNI socket
// is there (the kubelet retries a sandbox whose ADD finds no agent only after a backoff). Its
// directory and the log of every process are removed at the end unless NETLEASE_KEEP_CLUSTER_LOG.
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppsV1Api, V1Deployment } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { leaseWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { connectKube, type CoreApi, type KubeClients } from '../../kubernetes/kube';
import { unlessGone } from '../../temporal/workflow-gone';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { startCluster, type LocalCluster } from '../../tools/cluster';
import { startTracked, stopPid, type Tracked } from '../../tools/processes';
import { deleteAllNetns, makeNetns } from './netns';
import { NODE_AGENT_ENTRY } from './node-agent';
import {
  connectTest,
  runControlWorker,
  temporalAddress,
  testConfig,
  type RunningWorker,
  type TestTemporal,
} from './temporal';
import { waitForValue } from './wait';

export interface RealClusterOptions {
  /** Names the task queue, the directory and the host-side namespace. */
  prefix: string;
  nodeName: string;
  /** The control worker's reconciler interval (default: an hour, so it does not run). */
  reconcileIntervalSeconds?: number;
  preProduce?: boolean;
}

export interface RealCluster {
  readonly dir: string;
  readonly temporal: TestTemporal;
  readonly cluster: LocalCluster;
  readonly kube: KubeClients;
  readonly core: CoreApi;
  readonly apps: AppsV1Api;
  /** The running agent process, if any; a test that kills it sets this to undefined. */
  agent: Tracked | undefined;
  /** Starts the node agent; resolves once its CNI socket exists. */
  startAgent(): Promise<Tracked>;
  stop(): Promise<void>;
}

export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const dir = mkdtempSync(join(tmpdir(), `netlease-${options.prefix}-`));
  const temporal = await connectTest(options.prefix);
  const host = await makeNetns(`${options.prefix.slice(0, 6)}host`);
  const log = openSync(join(dir, 'cluster.log'), 'a');
  const cluster = await startCluster({
    dir,
    nodeName: options.nodeName,
    temporal: { address: temporalAddress(), taskQueue: temporal.taskQueue },
    pool: temporal.taskQueue,
    hostNetns: host.name,
    logFd: log,
    ...(options.preProduce !== undefined ? { preProduce: options.preProduce } : {}),
  });
  const reconcileIntervalSeconds = options.reconcileIntervalSeconds ?? 3600;
  const kubernetes = { kubeconfig: cluster.kubeconfig, watch: true, reconcileIntervalSeconds };
  const worker: RunningWorker = await runControlWorker(
    testConfig(temporal.taskQueue, { kubernetes, reuseCooldownSeconds: 1 }),
  );
  const kube = await connectKube(cluster.kubeconfig);
  const socket = (JSON.parse(readFileSync(cluster.agentConfig, 'utf8')) as { cniSocket: string }).cniSocket;
  const real: RealCluster = {
    dir,
    temporal,
    cluster,
    kube,
    core: kube.core,
    apps: kube.config.makeApiClient(kube.kube.AppsV1Api),
    agent: undefined,
    async startAgent() {
      const agent = startTracked(process.execPath, [NODE_AGENT_ENTRY, '--config', cluster.agentConfig], {
        stdio: ['ignore', log, log],
      });
      real.agent = agent;
      await waitForValue(async () => existsSync(socket), Boolean, 60_000, 200, `the agent's ${socket}`);
      return agent;
    },
    async stop() {
      if (real.agent) await stopPid(real.agent.pid);
      await worker.stop();
      await cluster.stop();
      await deleteAllNetns();
      await temporal.close();
      closeSync(log);
      if (process.env.NETLEASE_KEEP_CLUSTER_LOG)
        process.stdout.write(`${options.prefix}: log kept in ${dir}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
  await real.startAgent();
  return real;
}

/** A pod's eth0 lease: its state while open, its result once closed; undefined if there is none. */
export const leaseOfPod = (temporal: TestTemporal, podUid: string): Promise<LeaseState | undefined> =>
  unlessGone(async () => {
    const handle = temporal.client.workflow.getHandle(leaseWorkflowId(podUid, 'eth0'));
    const { status } = await handle.describe();
    return status.name === 'RUNNING'
      ? handle.query(leaseStateQuery)
      : (handle.result() as Promise<LeaseState>);
  }, undefined);

/** A Deployment of busybox pods that sleep, from the node's local image (nothing is pulled). */
export const sleepersDeployment = (app: string, replicas: number): V1Deployment => ({
  metadata: { name: app },
  spec: {
    replicas,
    selector: { matchLabels: { app } },
    template: {
      metadata: { labels: { app } },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
        ],
      },
    },
  },
});
