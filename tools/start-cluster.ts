// `npm start -- --cluster [--nodes 2]`: instead of a bare kube-apiserver and a simulated node, a
// cluster with the real controllers and a real node named after this machine (and a second one,
// `<name>-2`), its state in .netlease/cluster (a start after a stop is the nodes' reboot; the
// API's objects stay). Each node has its agent, with the host ends of its veth pairs in
// `netlease-host` (`netlease-host-2`).
import { join } from 'node:path';
import { KubernetesSchema, type NetleaseConfig } from '../domain/config';
import { hostNodeName } from '../kubernetes/node-name';
import { NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../worker/process-flags';
import { agentConfigOf, startCluster, type LocalCluster } from './cluster';
import { ensureHostNetns } from './dev-node';
import { installInCluster, VALUES_FILE, type InCluster } from './in-cluster';
import { ensureNetleaseImage, type NetleaseImage } from './netlease-image';
import { type Tracked } from './processes';
import { startReadable } from './readable-log';
import { runBootstrap } from './set-up';

export interface ClusterRun {
  cluster: LocalCluster;
  effective: NetleaseConfig;
  /** One per node, in the cluster's order: starts (or restarts) that node's agent. */
  agents: Array<{ nodeName: string; start(): Tracked }>;
}

/** The nodes of `--nodes <count>`: this machine's name, then `<name>-2`. */
const clusterNodes = (count: 1 | 2) =>
  [
    { nodeName: hostNodeName(), hostNetns: 'netlease-host' },
    { nodeName: `${hostNodeName()}-2`, hostNetns: 'netlease-host-2' },
  ].slice(0, count);

export async function startClusterRun(
  root: string,
  stateDir: string,
  config: NetleaseConfig,
  logFd: number,
  nodeCount: 1 | 2,
  started: (processes: Tracked[]) => void,
): Promise<ClusterRun> {
  if (config.kubernetes?.kubeconfig ?? process.env.KUBECONFIG)
    throw new Error('--cluster starts its own cluster: remove kubernetes.kubeconfig and KUBECONFIG');
  const pool = config.pools[0];
  if (!pool) throw new Error('--cluster: the config has no pool for the node');
  runBootstrap(root, '--cluster');
  const nodes = clusterNodes(nodeCount);
  for (const { hostNetns } of nodes) await ensureHostNetns(hostNetns);
  const names = nodes.map((n) => n.nodeName).join(' and ');
  console.log(
    `netlease: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and real nodes ` +
      `${names} (containerd + kubelet; state in ${join(stateDir, 'cluster')}, logs in cluster.log)`,
  );
  const startedAt = Date.now();
  const cluster = await startCluster({
    dir: join(stateDir, 'cluster'),
    nodes,
    temporal: config.temporal,
    pool: { name: pool.name, cidrs: pool.cidrs },
    logFd,
  });
  started(cluster.processes);
  console.log(`netlease: ${names} Ready in ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
  const effective: NetleaseConfig = {
    ...config,
    kubernetes: KubernetesSchema.parse({ ...config.kubernetes, kubeconfig: cluster.kubeconfig }),
  };
  const agentArgs = (config: string) => [
    ...NODE_AGENT_NODE_FLAGS,
    join(root, 'dist', 'worker', 'agent', 'node-agent.js'),
    '--config',
    config,
  ];
  const env = { ...process.env, ...PROCESS_ENV };
  return {
    cluster,
    effective,
    agents: cluster.nodes.map((node) => ({
      nodeName: node.real.nodeName,
      start: () => startReadable(process.execPath, agentArgs(agentConfigOf(node)), { env }),
    })),
  };
}

export interface InClusterRun {
  cluster: LocalCluster;
  image: NetleaseImage;
  installed: InCluster;
  valuesFile: string;
}

/** Each node's host namespace when netlease runs as pods: the chart's nodeAgent.hostNetns. */
export const IN_CLUSTER_HOST_NETNS = 'netlease-host-';

/**
 * `npm start -- --cluster --in-cluster`: the same cluster, its nodes' CNI dirs left to netlease's
 * own pods; the image built (tools/netlease-image) and imported into each node's containerd, and
 * the chart installed with helm (tools/in-cluster). Temporal stays outside, on this machine.
 */
export async function startInClusterRun(
  root: string,
  stateDir: string,
  config: NetleaseConfig,
  logFd: number,
  nodeCount: 1 | 2,
  started: (processes: Tracked[]) => void,
): Promise<InClusterRun> {
  const pool = config.pools[0];
  if (!pool) throw new Error('--cluster: the config has no pool for the node');
  runBootstrap(root, '--cluster');
  const image = ensureNetleaseImage(root);
  console.log(
    `netlease: the image ${image.ref}: ${(image.size / 1024 / 1024).toFixed(0)} MiB (${image.file})`,
  );
  const nodes = clusterNodes(nodeCount).map(({ nodeName }) => ({
    nodeName,
    hostNetns: `${IN_CLUSTER_HOST_NETNS}${nodeName}`,
  }));
  for (const { hostNetns } of nodes) await ensureHostNetns(hostNetns);
  const dir = join(stateDir, 'cluster-in');
  console.log(
    `netlease: starting the cluster (state in ${dir}, logs in cluster.log), then helm install of the chart`,
  );
  const cluster = await startCluster({
    dir,
    nodes,
    temporal: config.temporal,
    pool: { name: pool.name, cidrs: pool.cidrs },
    logFd,
    asPods: { images: [image] },
  });
  started(cluster.processes);
  const log = (line: string) => console.log(`netlease: ${line}`);
  const installed = await installInCluster({
    cluster,
    dir,
    image,
    temporal: config.temporal,
    pool: { name: pool.name, cidrs: pool.cidrs },
    hostNetnsPrefix: IN_CLUSTER_HOST_NETNS,
    reconcileIntervalSeconds: config.kubernetes?.reconcileIntervalSeconds ?? 60,
    log,
  }).catch(async (err: unknown) => {
    await cluster.stop();
    throw err;
  });
  return { cluster, image, installed, valuesFile: join(dir, VALUES_FILE) };
}

/** What to try, printed once everything runs. */
export const clusterHelp = (cluster: LocalCluster): string => `Kubernetes:   ${cluster.kubeconfig}
${cluster.nodes.map(({ real, reach }) => `  a real node ${real.nodeName} (kubelet + containerd on ${reach.nodeIp}, CNI: ${real.conflist});`).join('\n')}
  pods use the local images netlease.local/busybox:1 (imagePullPolicy: Never), e.g. a pod with
  command ["sleep", "3600"]; its lease appears in the UI (PodRef = "<namespace>/<pod>").
  This machine reaches the pods (probes, curl <pod ip>) and no other address of the pool.`;
