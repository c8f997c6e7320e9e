// `npm start -- --cluster`: instead of a bare kube-apiserver and a simulated node, a cluster with
// the real controllers and a real node named after this machine (tools/cluster), its state in
// .netlease/cluster (the node starts fresh each run; the API's objects stay). Its node agent is
// this machine's, with the host ends of its veth pairs in `netlease-host`.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { NetleaseConfig } from '../domain/config';
import { hostNodeName } from '../kubernetes/node-name';
import { NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../worker/process-flags';
import { startCluster, type LocalCluster } from './cluster';
import { ensureHostNetns } from './dev-node';
import { type Tracked } from './processes';
import { startReadable } from './readable-log';

const HOST_NETNS = 'netlease-host';

export interface ClusterRun {
  cluster: LocalCluster;
  effective: NetleaseConfig;
  startAgent(): Tracked;
}

/** bootstrap.sh --cluster: containerd, runc, the kubelet and controllers, the images (once). */
function setUpCluster(root: string): void {
  const run = spawnSync('sh', [join(root, 'tools', 'bootstrap.sh'), '--cluster'], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`tools/bootstrap.sh --cluster failed (exit ${run.status})`);
}

export async function startClusterRun(
  root: string,
  stateDir: string,
  config: NetleaseConfig,
  logFd: number,
  started: (processes: Tracked[]) => void,
): Promise<ClusterRun> {
  if (config.kubernetes?.kubeconfig ?? process.env.KUBECONFIG)
    throw new Error('--cluster starts its own cluster: remove kubernetes.kubeconfig and KUBECONFIG');
  const pool = config.pools[0];
  if (!pool) throw new Error('--cluster: the config has no pool for the node');
  setUpCluster(root);
  await ensureHostNetns(HOST_NETNS);
  const nodeName = hostNodeName();
  console.log(
    `netlease: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a real node ` +
      `${nodeName} (containerd + kubelet; state in ${join(stateDir, 'cluster')}, logs in cluster.log)`,
  );
  const startedAt = Date.now();
  const cluster = await startCluster({
    dir: join(stateDir, 'cluster'),
    nodes: [{ nodeName, hostNetns: HOST_NETNS }],
    temporal: config.temporal,
    pool: { name: pool.name, cidrs: pool.cidrs },
    logFd,
  });
  started(cluster.processes);
  console.log(`netlease: node ${nodeName} Ready in ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
  const effective: NetleaseConfig = {
    ...config,
    kubernetes: {
      reconcileIntervalSeconds: 60,
      watch: true,
      ...config.kubernetes,
      kubeconfig: cluster.kubeconfig,
    },
  };
  const [node] = cluster.nodes;
  if (!node) throw new Error('the cluster started no node');
  const args = [
    ...NODE_AGENT_NODE_FLAGS,
    join(root, 'dist', 'worker', 'agent', 'node-agent.js'),
    '--config',
    node.agentConfig,
  ];
  return {
    cluster,
    effective,
    startAgent: () => startReadable(process.execPath, args, { env: { ...process.env, ...PROCESS_ENV } }),
  };
}

/** What to try, printed once everything runs. */
export const clusterHelp = (cluster: LocalCluster): string => `Kubernetes:   ${cluster.kubeconfig}
${cluster.nodes.map(({ real }) => `  a real node ${real.nodeName} (kubelet + containerd, CNI: ${real.conflist});`).join('\n')}
  pods use the local images netlease.local/busybox:1 (imagePullPolicy: Never), e.g. a pod with
  command ["sleep", "3600"]; its lease appears in the UI (PodRef = "<namespace>/<pod>").`;
