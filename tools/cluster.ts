// A local cluster with real nodes (`npm start -- --cluster`, the real-node tests): etcd and
// kube-apiserver (tools/kube-apiserver), kube-controller-manager and kube-scheduler
// (tools/controllers), and one or two nodes, each containerd + kubelet (tools/real-node), whose
// CNI calls go to netlease: the conflist install-cni wrote names the node's agent, which the caller
// runs with the node's `agentConfig` (npm start supervises it; a test may kill it). Two nodes are
// joined by tools/node-fabric, so pods reach each other across them. The machine reaches each
// node's pods, and no other address of the pool (tools/node-reach); each kubelet serves on its
// node's IP there, every other server on loopback.
import { mkdirSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { NodeAgentConfigSchema, type TemporalConnectionSchema } from '../domain/config';
import { connectKube, kubeCall, type KubeClients } from '../kubernetes/kube';
import { startControllers } from './controllers';
import { startLocalKube, type LocalKube } from './kube-apiserver';
import { linkNodes } from './node-fabric';
import type { NodeImage } from './node-images';
import { reachPods, type NodeReach } from './node-reach';
import { startRealNode, type RealNode } from './real-node';
import { stopPid, waitFor, type Tracked } from './processes';

export interface ClusterNodeOptions {
  nodeName: string;
  /** The node agent's namespace (a name) for the host ends of veth pairs; the caller makes it. */
  hostNetns: string;
}

export interface ClusterOptions {
  dir: string;
  /** One node, or two (joined by a fabric link between their host namespaces). */
  nodes: ClusterNodeOptions[];
  /** Where the nodes' CNI calls and agents reach netlease's control plane. */
  temporal: z.input<typeof TemporalConnectionSchema>;
  /** The pool the nodes' pods take addresses from; two nodes route its CIDRs to each other. */
  pool: { name: string; cidrs: string[] };
  /** The network's name in the conflist (and the agent's preProduce). */
  network?: string;
  /** Whether the agent produces a pod's lease when it is bound, before its ADD (default true). */
  preProduce?: boolean;
  logFd?: number;
  /**
   * netlease is installed as pods afterwards (tools/in-cluster): the nodes read their CNI dirs from
   * the host directories of `hostDirsOf(dir)` (one per node under each), pods get service account
   * tokens, these images are imported, and the start waits for the nodes to register, not to be
   * Ready (their network is not, until the agent's install-cni writes the conflist).
   */
  asPods?: { images: NodeImage[] };
}

/** The host directories the agent DaemonSet mounts (hostPaths.perNode: `<each>/<node name>`). */
export const hostDirsOf = (dir: string) => ({
  cniBin: join(dir, 'hosts', 'cni-bin'),
  cniConf: join(dir, 'hosts', 'cni-conf'),
  run: join(dir, 'hosts', 'run'),
  state: join(dir, 'hosts', 'state'),
});

export interface ClusterNode {
  real: RealNode;
  hostNetns: string;
  /** The machine's link into `hostNetns` and the node's IP (tools/node-reach). */
  reach: NodeReach;
  /** The node agent's config file (`node-agent.js --config <it>`); none when netlease runs as pods. */
  agentConfig?: string;
  /** The agent's CNI socket (there once the agent serves). */
  agentSocket: string;
}

export interface LocalCluster {
  kube: LocalKube;
  kubeconfig: string;
  /** In the order of the options. */
  nodes: ClusterNode[];
  /** The servers, in the order they started, then each node's (those running now). */
  readonly processes: Tracked[];
  /**
   * The nodes, the controllers, then etcd and kube-apiserver; mounts and namespaces removed, and
   * what the machine's namespace gained (links, routes).
   */
  stop(): Promise<void>;
}

/** Whether the node is registered (`registered`) or Ready. */
async function nodeReady(
  { core, timeouts }: KubeClients,
  name: string,
  registered = false,
): Promise<boolean> {
  try {
    const ms = timeouts.callSeconds * 1000;
    const node = await kubeCall(`reading node ${name}`, ms, (options) => core.readNode({ name }, options));
    if (registered) return true;
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch {
    return false;
  }
}

/** The node's agent config (host-process mode); netlease as pods has none on the host. */
export function agentConfigOf(node: ClusterNode): string {
  if (!node.agentConfig)
    throw new Error(`netlease runs as pods on ${node.real.nodeName}: no agent process to start`);
  return node.agentConfig;
}

/** Waits until every node of the cluster is Ready (after netlease is installed as pods). */
export async function waitNodesReady(cluster: LocalCluster, ms = 180_000): Promise<void> {
  const clients = await connectKube(cluster.kubeconfig);
  for (const { real } of cluster.nodes)
    if (!(await waitFor(() => nodeReady(clients, real.nodeName), ms, 500)))
      throw new Error(`node ${real.nodeName} did not become Ready (kubelet log: see the cluster's log)`);
}

const agentDirOf = (nodeDir: string) => join(nodeDir, 'agent');

function writeAgentConfig(
  options: ClusterOptions,
  kubeconfig: string,
  nodeDir: string,
  node: ClusterNodeOptions,
  conflist: string,
) {
  const network = options.network ?? 'netlease';
  const agent = agentDirOf(nodeDir);
  const config = NodeAgentConfigSchema.parse({
    temporal: options.temporal,
    nodeName: node.nodeName,
    hostNetns: node.hostNetns,
    cniSocket: join(agent, 'cni.sock'),
    deleteQueue: join(agent, 'del-queue'),
    offerDir: join(agent, 'offers'),
    kubernetes: { kubeconfig },
    ...(options.preProduce === false
      ? {}
      : { preProduce: { network, pool: options.pool.name, mode: 'ptp', conflist } }),
  });
  const file = join(nodeDir, 'node-agent.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { agentConfig: file, agentSocket: config.cniSocket };
}

/** A real node under `<dir>/node-<i>`, Ready, with its agent's config written (not started). */
async function startClusterNode(
  options: ClusterOptions,
  kube: LocalKube,
  index: number,
  reach: NodeReach,
): Promise<ClusterNode> {
  const spec = options.nodes[index];
  if (!spec) throw new Error(`no node ${index}`);
  const nodeDir = join(options.dir, `node-${index}`);
  const agent = agentDirOf(nodeDir);
  mkdirSync(agent, { recursive: true });
  if (options.asPods) return startPodNode(options, kube, spec, nodeDir, reach);
  const real = await startRealNode({
    dir: nodeDir,
    nodeName: spec.nodeName,
    kubeconfig: kube.kubeconfig,
    nodeIp: reach.nodeIp,
    network: {
      name: options.network ?? 'netlease',
      mode: 'ptp',
      pool: options.pool.name,
      agentSocket: join(agent, 'cni.sock'),
      deleteQueue: join(agent, 'del-queue'),
      temporal: options.temporal,
      cniVersion: '1.0.0', // containerd 1.6's libcni knows CNI versions up to 1.0.0
    },
    logFd: options.logFd,
  });
  return {
    real,
    hostNetns: spec.hostNetns,
    reach,
    ...writeAgentConfig(options, kube.kubeconfig, nodeDir, spec, real.conflist),
  };
}

/** A node whose netlease runs as pods: its CNI dirs are the DaemonSet's host directories. */
async function startPodNode(
  options: ClusterOptions,
  kube: LocalKube,
  spec: ClusterNodeOptions,
  nodeDir: string,
  reach: NodeReach,
): Promise<ClusterNode> {
  const hosts = hostDirsOf(options.dir);
  const own = (dir: string) => join(dir, spec.nodeName);
  const cni = { binDir: own(hosts.cniBin), confDir: own(hosts.cniConf) };
  const real = await startRealNode({
    dir: nodeDir,
    nodeName: spec.nodeName,
    kubeconfig: kube.kubeconfig,
    nodeIp: reach.nodeIp,
    network: {},
    logFd: options.logFd,
    asPods: { cni, images: options.asPods?.images ?? [] },
  });
  return { real, hostNetns: spec.hostNetns, reach, agentSocket: join(own(hosts.run), 'cni.sock') };
}

export async function startCluster(options: ClusterOptions): Promise<LocalCluster> {
  if (options.nodes.length < 1 || options.nodes.length > 2)
    throw new Error(`a local cluster has one or two nodes, not ${options.nodes.length} (tools/node-fabric)`);
  const log = (line: string) =>
    options.logFd === undefined ? console.log(line) : writeSync(options.logFd, `${line}\n`);
  // First: a pool another run holds (PoolRangeTaken) is refused before anything starts.
  const reach = await reachPods(
    options.nodes.map((n) => n.hostNetns),
    options.pool.cidrs,
    log,
  );
  const servers: Tracked[] = [];
  const nodes: ClusterNode[] = [];
  const stop = async () => {
    for (const node of nodes) await node.real.stop();
    for (const p of [...servers].reverse()) await stopPid(p.pid);
    await reach.stop();
  };
  let kube: LocalKube;
  try {
    const kubeDir = join(options.dir, 'kube');
    kube = await startLocalKube({ dir: kubeDir, logFd: options.logFd, serviceAccounts: !!options.asPods });
    servers.push(...[...kube.processes].reverse()); // etcd first
    servers.push(...(await startControllers({ kube, kubeDir, dir: options.dir, logFd: options.logFd })));
    // One after the other: a failed start stops exactly the nodes that started.
    for (const [index, nodeReach] of reach.nodes.entries())
      nodes.push(await startClusterNode(options, kube, index, nodeReach));
    const [a, b] = nodes;
    if (a && b) await linkNodes(a.hostNetns, b.hostNetns, options.pool.cidrs);
    const clients = await connectKube(kube.kubeconfig);
    const registered = !!options.asPods;
    for (const { real } of nodes)
      if (!(await waitFor(() => nodeReady(clients, real.nodeName, registered), 120_000, 500)))
        throw new Error(
          `node ${real.nodeName} did not ${registered ? 'register' : 'become Ready'} (kubelet log: see the cluster's log)`,
        );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    kube,
    kubeconfig: kube.kubeconfig,
    nodes,
    get processes() {
      return [...servers, ...nodes.flatMap((n) => n.real.processes)];
    },
    stop,
  };
}
