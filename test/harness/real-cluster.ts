// A test's local cluster with one or two real nodes (tools/cluster): the file's Temporal task
// queue, a control worker watching it, and each node's agent as its own process, started once its
// CNI socket is there (the kubelet retries a sandbox whose ADD finds no agent only after a
// backoff). Its pool is its own in the machine (the machine routes it, tools/node-reach): a /22
// of 198.19.0.0/17 and a /64 of fd00::/8 at random, another drawn when another run holds it. Its
// directory and the log of every process are removed at the end unless NETLEASE_KEEP_CLUSTER_LOG.
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppsV1Api, V1Deployment } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { leaseWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { connectKube, type CoreApi, type KubeClients } from '../../kubernetes/kube';
import { unlessGone } from '../../temporal/workflow-gone';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { leaseStateQuery } from '../../workflows/lease-messages';
import {
  agentConfigOf,
  startCluster,
  type ClusterNode,
  type ClusterOptions,
  type LocalCluster,
} from '../../tools/cluster';
import { PoolRangeTaken } from '../../tools/machine-routes';
import { startTracked, stopPid, type Tracked } from '../../tools/processes';
import { deleteAllNetns, makeNetns } from './netns';
import { randomPoolCidrs } from './pool-cidrs';
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
  /** Names the task queue, the directory and the host-side namespaces. */
  prefix: string;
  /** One node, or two (their host namespaces joined, so pods reach across). */
  nodeNames: [string] | [string, string];
  /** The control worker's reconciler interval (default: an hour, so it does not run). */
  reconcileIntervalSeconds?: number;
  preProduce?: boolean;
}

/** A real node of the test's cluster with its node agent process. */
export interface RealClusterNode extends ClusterNode {
  /** The running agent process, if any; a test that kills it sets this to undefined. */
  agent: Tracked | undefined;
  /** Starts the node agent; resolves once its CNI socket exists. */
  startAgent(): Promise<Tracked>;
}

export interface RealCluster {
  readonly dir: string;
  readonly temporal: TestTemporal;
  readonly cluster: LocalCluster;
  readonly kube: KubeClients;
  readonly core: CoreApi;
  readonly apps: AppsV1Api;
  /** The pool the nodes' pods take addresses from, the cluster's own in the machine. */
  readonly pool: { name: string; cidrs: string[] };
  /** In the order of `nodeNames`. */
  readonly nodes: RealClusterNode[];
  stop(): Promise<void>;
}

function withAgent(node: ClusterNode, log: number): RealClusterNode {
  const withProcess: RealClusterNode = {
    ...node,
    agent: undefined,
    async startAgent() {
      const agent = startTracked(process.execPath, [NODE_AGENT_ENTRY, '--config', agentConfigOf(node)], {
        stdio: ['ignore', log, log],
      });
      withProcess.agent = agent;
      await waitForValue(
        async () => existsSync(node.agentSocket),
        Boolean,
        60_000,
        200,
        `the agent's ${node.agentSocket}`,
      );
      return agent;
    },
  };
  return withProcess;
}

export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const dir = mkdtempSync(join(tmpdir(), `netlease-${options.prefix}-`));
  const temporal = await connectTest(options.prefix);
  const log = openSync(join(dir, 'cluster.log'), 'a');
  const nodes = [];
  for (const [i, nodeName] of options.nodeNames.entries())
    nodes.push({ nodeName, hostNetns: (await makeNetns(`${options.prefix.slice(0, 5)}host${i}`)).name });
  const pool = { name: temporal.taskQueue, cidrs: [] as string[] };
  const cluster = await startWithOwnPool(pool, {
    dir,
    nodes,
    temporal: { address: temporalAddress(), taskQueue: temporal.taskQueue },
    logFd: log,
    ...(options.preProduce !== undefined ? { preProduce: options.preProduce } : {}),
  }).catch(async (err: unknown) => {
    await deleteAllNetns(); // the cluster stopped what it started; the namespaces are the test's
    throw err;
  });
  const reconcileIntervalSeconds = options.reconcileIntervalSeconds ?? 3600;
  const kubernetes = { kubeconfig: cluster.kubeconfig, watch: true, reconcileIntervalSeconds };
  const worker: RunningWorker = await runControlWorker(
    testConfig(temporal.taskQueue, { kubernetes, reuseCooldownSeconds: 1, pools: [pool] }),
  );
  const kube = await connectKube(cluster.kubeconfig);
  const real: RealCluster = {
    dir,
    temporal,
    cluster,
    kube,
    core: kube.core,
    apps: kube.config.makeApiClient(kube.kube.AppsV1Api),
    pool,
    nodes: cluster.nodes.map((node) => withAgent(node, log)),
    async stop() {
      for (const node of real.nodes) if (node.agent) await stopPid(node.agent.pid);
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
  for (const node of real.nodes) await node.startAgent();
  return real;
}

/** The cluster on a pool drawn at random (`pool.cidrs` set to it), again while another run holds it. */
async function startWithOwnPool(
  pool: { name: string; cidrs: string[] },
  options: Omit<ClusterOptions, 'pool'>,
): Promise<LocalCluster> {
  for (let attempt = 1; ; attempt++) {
    pool.cidrs = randomPoolCidrs();
    try {
      return await startCluster({ ...options, pool });
    } catch (err) {
      if (!(err instanceof PoolRangeTaken) || attempt === 5) throw err;
    }
  }
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

/**
 * A Deployment of busybox web servers whose kubelet probes reach them on their pod address:
 * readiness by HTTP GET, liveness by TCP connect, both to busybox httpd, every second.
 */
export const probedDeployment = (app: string, replicas: number): V1Deployment => ({
  metadata: { name: app },
  spec: {
    replicas,
    selector: { matchLabels: { app } },
    template: {
      metadata: { labels: { app } },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'web',
            image: BUSYBOX_IMAGE,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', 'mkdir -p /www && echo ok >/www/ready && exec httpd -f -p 8080 -h /www'],
            readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1, timeoutSeconds: 1 },
            livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, timeoutSeconds: 1 },
          },
        ],
      },
    },
  },
});

/** The node of a one-node cluster. */
export function onlyNode(real: RealCluster): RealClusterNode {
  const [node, ...more] = real.nodes;
  if (!node || more.length) throw new Error(`the cluster has ${real.nodes.length} nodes, not 1`);
  return node;
}
