// A local cluster with a real node (`npm start -- --cluster`, the real-node tests): etcd and
// kube-apiserver (tools/kube-apiserver), kube-controller-manager and kube-scheduler
// (tools/controllers), and one node, containerd + kubelet (tools/real-node), whose CNI calls go to
// netlease: the conflist install-cni wrote names this node's agent, which the caller runs with
// `agentConfig` (npm start supervises it; a test may kill it). Everything listens on loopback.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { NodeAgentConfigSchema, type TemporalConnectionSchema } from '../domain/config';
import { connectKube, type CoreApi } from '../kubernetes/kube';
import { startControllers } from './controllers';
import { startLocalKube, type LocalKube } from './kube-apiserver';
import { startRealNode, type RealNode } from './real-node';
import { stopPid, waitFor, type Tracked } from './processes';

export interface ClusterOptions {
  dir: string;
  nodeName: string;
  /** Where the node's CNI calls and its agent reach netlease's control plane. */
  temporal: z.input<typeof TemporalConnectionSchema>;
  pool: string;
  /** The network's name in the conflist (and the agent's preProduce). */
  network?: string;
  /** The agent's namespace (a name) for the host ends of veth pairs; the caller makes it. */
  hostNetns: string;
  /** Whether the agent produces a pod's lease when it is bound, before its ADD (default true). */
  preProduce?: boolean;
  logFd?: number;
}

export interface LocalCluster {
  kube: LocalKube;
  kubeconfig: string;
  node: RealNode;
  /** The node agent's config file (`node-agent.js --config <it>`). */
  agentConfig: string;
  /** The servers, in the order they started. */
  processes: Tracked[];
  /** The node, the controllers, then etcd and kube-apiserver; mounts and namespaces removed. */
  stop(): Promise<void>;
}

async function nodeReady(core: CoreApi, name: string): Promise<boolean> {
  try {
    const node = await core.readNode({ name });
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch {
    return false;
  }
}

function writeAgentConfig(options: ClusterOptions, node: RealNode, kubeconfig: string): string {
  const network = options.network ?? 'netlease';
  const dir = join(options.dir, 'node');
  const config = NodeAgentConfigSchema.parse({
    temporal: options.temporal,
    nodeName: options.nodeName,
    hostNetns: options.hostNetns,
    cniSocket: join(dir, 'agent', 'cni.sock'),
    deleteQueue: join(dir, 'agent', 'del-queue'),
    offerDir: join(dir, 'agent', 'offers'),
    kubernetes: { kubeconfig },
    ...(options.preProduce === false
      ? {}
      : { preProduce: { network, pool: options.pool, mode: 'ptp', conflist: node.conflist } }),
  });
  const file = join(dir, 'node-agent.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

export async function startCluster(options: ClusterOptions): Promise<LocalCluster> {
  const kubeDir = join(options.dir, 'kube');
  const kube = await startLocalKube({ dir: kubeDir, logFd: options.logFd });
  const processes: Tracked[] = [...kube.processes].reverse(); // etcd first
  const stopAll = async () => {
    for (const p of [...processes].reverse()) await stopPid(p.pid);
  };
  let node: RealNode | undefined;
  try {
    processes.push(...(await startControllers({ kube, kubeDir, dir: options.dir, logFd: options.logFd })));
    const nodeDir = join(options.dir, 'node');
    const agent = join(nodeDir, 'agent');
    node = await startRealNode({
      dir: nodeDir,
      nodeName: options.nodeName,
      kubeconfig: kube.kubeconfig,
      network: {
        name: options.network ?? 'netlease',
        mode: 'ptp',
        pool: options.pool,
        agentSocket: join(agent, 'cni.sock'),
        deleteQueue: join(agent, 'del-queue'),
        temporal: options.temporal,
        cniVersion: '1.0.0', // containerd 1.6's libcni knows CNI versions up to 1.0.0
      },
      logFd: options.logFd,
    });
    processes.push(...node.processes);
    const { core } = await connectKube(kube.kubeconfig);
    if (!(await waitFor(() => nodeReady(core, options.nodeName), 120_000, 500)))
      throw new Error(`node ${options.nodeName} did not become Ready (kubelet log: see the cluster's log)`);
  } catch (err) {
    await node?.stop();
    await stopAll();
    throw err;
  }
  const started = node;
  return {
    kube,
    kubeconfig: kube.kubeconfig,
    node: started,
    agentConfig: writeAgentConfig(options, started, kube.kubeconfig),
    processes,
    async stop() {
      await started.stop();
      await stopAll();
    },
  };
}
