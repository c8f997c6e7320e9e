// A test's local cluster with one or two real nodes (tools/cluster): the file's Temporal task
// queue, a control worker watching it, and each node's agent as its own process, started once its
// CNI socket is there (the kubelet retries a sandbox whose ADD finds no agent only after a
// backoff). Its pool is its own in the machine (the machine routes it, tools/node-reach): a /22
// of 198.19.0.0/17 and a /64 of fd00::/8 at random, another drawn when another run holds it. Its
// directory and the log of every process are removed at the end unless NETLEASE_KEEP_CLUSTER_LOG.
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppsV1Api, V1Deployment, V1Pod } from '@kubernetes/client-node' with {
  'resolution-mode': 'import',
};
import type { z } from 'zod';
import type { PoolSpecSchema } from '../../domain/config';
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
import { installInCluster, type InCluster } from '../../tools/in-cluster';
import { ensureNetleaseImage } from '../../tools/netlease-image';
import { readyAgent, killAgent, type AgentContainer } from './agent-pod';
import { startTlsProxy, type TlsProxy } from './tls-proxy';
import { deleteAllNetns, makeNamedNetns, makeNetns } from './netns';
import { randomPoolCidrs } from './pool-cidrs';
import { installPoolCrd, poolObjects } from './pool-objects';
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

const ROOT = join(__dirname, '..', '..', '..');

export interface RealClusterOptions {
  /** Names the task queue, the directory and the host-side namespaces. */
  prefix: string;
  /** One node, or two (their host namespaces joined, so pods reach across). */
  nodeNames: [string] | [string, string];
  /** The control worker's reconciler interval (default: an hour, so it does not run). */
  reconcileIntervalSeconds?: number;
  preProduce?: boolean;
  /** Pools served besides the cluster's own (not routed by the machine), e.g. with selectors. */
  morePools?: Array<z.input<typeof PoolSpecSchema>>;
  /**
   * The pools as NetleasePool objects (`kubernetes.poolObjects`): the CRD of deploy/ installed and
   * one object per pool made before the control worker starts. The control worker as a host
   * process only (the harness does not set the chart's `poolObjects`).
   */
  poolObjects?: boolean;
}

/** The node agent: a host process, or with NETLEASE_E2E_IN_CLUSTER=1 its DaemonSet pod's container. */
export type NodeAgentProcess = Tracked | AgentContainer;

/** A real node of the test's cluster with its node agent process. */
export interface RealClusterNode extends ClusterNode {
  /** The running agent process, if any; a test that kills it sets this to undefined. */
  agent: NodeAgentProcess | undefined;
  /**
   * Starts the node agent; resolves once its CNI socket exists. As pods: waits for the kubelet
   * (or the DaemonSet controller) to run a new agent container, ready.
   */
  startAgent(): Promise<NodeAgentProcess>;
  /** Kills the agent's process with `signal`; the signal it ended by. */
  killAgent(signal: NodeJS.Signals): Promise<NodeJS.Signals | null>;
  /**
   * The node goes down: its kubelet and its agent stop, its pods' containers keep running (a
   * node whose state is unknown). As pods, a power cut instead: every container stops with the
   * kubelet, netlease's own too (a running agent or control worker whose pod the API deleted
   * would go on with a revoked token, which no real node down does).
   */
  goDown(): Promise<void>;
  /** The node back under its name (a new Node object): its kubelet, and its agent serving. */
  comeBack(): Promise<void>;
}

/** netlease installed as pods by its chart (tools/in-cluster) instead of host processes. */
export const inClusterMode = (): boolean => process.env.NETLEASE_E2E_IN_CLUSTER === '1';

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
  /** netlease's Helm release when it runs as pods (NETLEASE_E2E_IN_CLUSTER=1). */
  readonly installed: InCluster | undefined;
  stop(): Promise<void>;
}

/** The signal a tracked process ended by. */
const signalOf = (tracked: Tracked) =>
  new Promise<NodeJS.Signals | null>((resolve) => {
    if (tracked.child.exitCode !== null || tracked.child.signalCode !== null)
      resolve(tracked.child.signalCode);
    else tracked.child.once('exit', (_code, signal) => resolve(signal));
  });

function withAgent(node: ClusterNode, log: number): RealClusterNode {
  const withProcess: RealClusterNode = {
    ...node,
    agent: undefined,
    async goDown() {
      if (withProcess.agent) await stopPid(withProcess.agent.pid);
      withProcess.agent = undefined;
      await node.real.stopKubelet();
    },
    async comeBack() {
      await node.real.startKubelet();
      await withProcess.startAgent();
    },
    async killAgent(signal) {
      const agent = withProcess.agent;
      if (!agent || !('child' in agent)) throw new Error(`no agent process on ${node.real.nodeName}`);
      const died = signalOf(agent);
      process.kill(agent.pid, signal);
      withProcess.agent = undefined;
      return died;
    },
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

/** With netlease as pods, each node's host namespace: the chart's nodeAgent.hostNetns names it so. */
const POD_HOST_NETNS = 'nlt-h-';

export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const asPods = inClusterMode();
  if (asPods && options.poolObjects)
    throw new Error('poolObjects: with the control worker as a host process only');
  const dir = mkdtempSync(join(tmpdir(), `netlease-${options.prefix}-`));
  const temporal = await connectTest(options.prefix);
  const log = openSync(join(dir, 'cluster.log'), 'a');
  const nodes = [];
  for (const [i, nodeName] of options.nodeNames.entries()) {
    const made = asPods
      ? await makeNamedNetns(`${POD_HOST_NETNS}${nodeName}`)
      : await makeNetns(`${options.prefix.slice(0, 5)}host${i}`);
    nodes.push({ nodeName, hostNetns: made.name });
  }
  const image = asPods ? ensureNetleaseImage(ROOT) : undefined;
  const pool = { name: temporal.taskQueue, cidrs: [] as string[] };
  const connection = { address: temporalAddress(), taskQueue: temporal.taskQueue };
  const cluster = await startWithOwnPool(pool, {
    dir,
    nodes,
    temporal: connection,
    logFd: log,
    ...(options.preProduce !== undefined ? { preProduce: options.preProduce } : {}),
    ...(image ? { asPods: { images: [image] } } : {}),
  }).catch(async (err: unknown) => {
    await deleteAllNetns(); // the cluster stopped what it started; the namespaces are the test's
    throw err;
  });
  // As pods, the control worker that watches may lose its node (its pod, and with it its token,
  // deleted with the Node): deletions made during the handover of the watch reach no watcher, and
  // the reconciler's sweep releases those leases, as in production (60 s there, 10 s here).
  const reconcileIntervalSeconds = options.reconcileIntervalSeconds ?? (asPods ? 10 : 3600);
  const stopCluster = async () => {
    await cluster.stop();
    await deleteAllNetns();
    await temporal.close();
    closeSync(log);
    if (process.env.NETLEASE_KEEP_CLUSTER_LOG)
      process.stdout.write(`${options.prefix}: log kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  };
  let installed: InCluster | undefined;
  let worker: RunningWorker | undefined;
  let tlsProxy: TlsProxy | undefined;
  try {
    // As pods, netlease reaches Temporal over mTLS: nginx in front of the test run's server (the
    // test's own client keeps the plain address).
    if (image) tlsProxy = await startTlsProxy(temporalAddress());
    if (image && tlsProxy)
      installed = await installInCluster({
        cluster,
        dir,
        image,
        temporal: { ...connection, address: tlsProxy.address },
        tls: { ca: tlsProxy.files.ca, cert: tlsProxy.files.clientCert, key: tlsProxy.files.clientKey },
        pool,
        ...(options.morePools ? { morePools: options.morePools } : {}),
        hostNetnsPrefix: POD_HOST_NETNS,
        reconcileIntervalSeconds,
        ...(options.preProduce !== undefined ? { preProduce: options.preProduce } : {}),
        log: (line) => writeSync(log, `${line}\n`),
      });
    else {
      const pools = [pool, ...(options.morePools ?? [])];
      if (options.poolObjects) await createPoolObjects(cluster.kubeconfig, pools);
      const fromObjects = options.poolObjects ? { poolObjects: true, poolStatusIntervalSeconds: 1 } : {};
      const kubernetes = {
        kubeconfig: cluster.kubeconfig,
        watch: true,
        reconcileIntervalSeconds,
        ...fromObjects,
      };
      worker = await runControlWorker(
        testConfig(temporal.taskQueue, {
          kubernetes,
          reuseCooldownSeconds: 1,
          pools: options.poolObjects ? [] : pools,
        }),
      );
    }
  } catch (err) {
    await stopCluster();
    await tlsProxy?.stop();
    throw err;
  }
  const kube = await connectKube(cluster.kubeconfig);
  const real: RealCluster = {
    dir,
    temporal,
    cluster,
    kube,
    core: kube.core,
    apps: kube.config.makeApiClient(kube.kube.AppsV1Api),
    pool,
    installed,
    nodes: cluster.nodes.map((node) => (asPods ? withAgentPod(node, kube.core) : withAgent(node, log))),
    async stop() {
      // As pods, the agents go with their node's containerd (a power cut, as for every pod).
      for (const node of real.nodes) if (node.agent && 'child' in node.agent) await stopPid(node.agent.pid);
      await worker?.stop();
      await stopCluster();
      await tlsProxy?.stop();
    },
  };
  for (const node of real.nodes) await node.startAgent();
  return real;
}

/** The node's agent as its DaemonSet's pod: found, killed and awaited through the API and containerd. */
function withAgentPod(node: ClusterNode, core: CoreApi): RealClusterNode {
  const nodeName = node.real.nodeName;
  const withPod: RealClusterNode = {
    ...node,
    agent: undefined,
    async startAgent() {
      const previous = withPod.agent;
      const agent = await readyAgent(
        core,
        node.real.containerd.ctr,
        nodeName,
        previous && 'containerId' in previous ? previous : undefined,
      );
      withPod.agent = agent;
      return agent;
    },
    async goDown() {
      await node.real.stop();
      withPod.agent = undefined;
    },
    async comeBack() {
      await node.real.reboot();
      await withPod.startAgent();
    },
    async killAgent(signal) {
      const agent = withPod.agent;
      if (!agent || !('containerId' in agent)) throw new Error(`no agent container on ${nodeName}`);
      const died = await killAgent(core, nodeName, agent, signal);
      withPod.agent = undefined;
      return died;
    },
  };
  return withPod;
}

/** The CRD of deploy/ and a NetleasePool object per pool, as an operator applies them. */
async function createPoolObjects(
  kubeconfig: string,
  pools: Array<z.input<typeof PoolSpecSchema>>,
): Promise<void> {
  const clients = await connectKube(kubeconfig);
  await installPoolCrd(clients);
  const objects = poolObjects(clients);
  for (const { name, ...spec } of pools) await objects.create(name, spec);
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

/** A busybox pod that sleeps, bound to `node` (no scheduler), from the node's local image. */
export const sleeperPod = (name: string, node: string, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name, annotations },
  spec: {
    nodeName: node,
    terminationGracePeriodSeconds: 2,
    containers: [
      { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
    ],
  },
});

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

/** The Deployment's pods, one node at most one pod ahead of the other (the scheduler spreads them). */
export const spreadOverNodes = (deployment: V1Deployment): V1Deployment => {
  const spec = deployment.spec?.template.spec;
  if (spec)
    spec.topologySpreadConstraints = [
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: deployment.spec?.selector.matchLabels ?? {} },
      },
    ];
  return deployment;
};

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
function onlyNode(real: RealCluster): RealClusterNode {
  const [node, ...more] = real.nodes;
  if (!node || more.length) throw new Error(`the cluster has ${real.nodes.length} nodes, not 1`);
  return node;
}

/** The real cluster as a test file uses it: with the node of a one-node cluster. */
export interface UsedRealCluster extends RealCluster {
  /** The only node (throws for a cluster of two). */
  readonly node: RealClusterNode;
}

/**
 * The test file's real cluster: started in its beforeAll and stopped in its afterAll. Its parts
 * are read through the object returned, from the tests (reading one before beforeAll ran throws).
 * `enabled: false` starts nothing (a file whose tests are skipped in this mode).
 */
export function useRealCluster(
  options: RealClusterOptions,
  {
    startMs = 300_000,
    stopMs = 180_000,
    enabled = true,
  }: { startMs?: number; stopMs?: number; enabled?: boolean } = {},
): UsedRealCluster {
  let started: RealCluster | undefined;
  beforeAll(async () => {
    if (enabled) started = await startRealCluster(options);
  }, startMs);
  afterAll(() => started?.stop(), stopMs);
  const real = (): RealCluster => {
    if (!started) throw new Error(`the real cluster ${options.prefix} is used before its beforeAll ran`);
    return started;
  };
  return {
    get dir() {
      return real().dir;
    },
    get temporal() {
      return real().temporal;
    },
    get cluster() {
      return real().cluster;
    },
    get kube() {
      return real().kube;
    },
    get core() {
      return real().core;
    },
    get apps() {
      return real().apps;
    },
    get pool() {
      return real().pool;
    },
    get nodes() {
      return real().nodes;
    },
    get installed() {
      return real().installed;
    },
    get node() {
      return onlyNode(real());
    },
    stop: () => real().stop(),
  };
}

/** Scales a Deployment as `kubectl scale` does: a merge patch of spec.replicas. */
export async function scaleDeployment(
  real: RealCluster,
  name: string,
  replicas: number,
  namespace = 'default',
): Promise<void> {
  // client-node 1.x would send a JSON patch without the header.
  const { kube } = real.kube;
  const mergePatch = kube.setHeaderOptions('Content-Type', kube.PatchStrategy.MergePatch);
  await real.apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas } } }, mergePatch);
}
