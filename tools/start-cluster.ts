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

/** What to try, printed once everything runs. */
export const clusterHelp = (cluster: LocalCluster): string => `Kubernetes:   ${cluster.kubeconfig}
${cluster.nodes.map(({ real, reach }) => `  a real node ${real.nodeName} (kubelet + containerd on ${reach.nodeIp}, CNI: ${real.conflist});`).join('\n')}
  pods use the local images netlease.local/busybox:1 (imagePullPolicy: Never), e.g. a pod with
  command ["sleep", "3600"]; its lease appears in the UI (PodRef = "<namespace>/<pod>").
  This machine reaches the pods (probes, curl <pod ip>) and no other address of the pool.`;
