// The test's hand on the cluster (there is no kubelet, scheduler or controller-manager): create
// nodes and pods, set pod phases through the status subresource, delete with grace period 0.
import { randomUUID } from 'node:crypto';
import { connectKube, type KubeClients } from '../../kubernetes/kube';

export function kubeconfigPath(): string {
  const path = process.env.NETLEASE_TEST_KUBECONFIG;
  if (!path) throw new Error('NETLEASE_TEST_KUBECONFIG is not set: run tests through jest (global setup)');
  return path;
}

export interface TestCluster {
  clients: KubeClients;
  namespace: string;
  createNode(name: string): Promise<string>;
  deleteNode(name: string): Promise<void>;
  createPod(name: string, nodeName: string): Promise<string>;
  setPodPhase(name: string, phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'): Promise<void>;
  deletePod(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function testCluster(prefix: string): Promise<TestCluster> {
  const clients = await connectKube(kubeconfigPath());
  const { core } = clients;
  const namespace = `${prefix}-${randomUUID().slice(0, 8)}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const nodes = new Set<string>();
  return {
    clients,
    namespace,
    async createNode(name) {
      const node = await core.createNode({ body: { metadata: { name } } });
      nodes.add(name);
      return node.metadata?.uid ?? '';
    },
    async deleteNode(name) {
      await core.deleteNode({ name, gracePeriodSeconds: 0 });
    },
    async createPod(name, nodeName) {
      const pod = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name },
          spec: { nodeName, containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
        },
      });
      return pod.metadata?.uid ?? '';
    },
    async setPodPhase(name, phase) {
      const pod = await core.readNamespacedPodStatus({ name, namespace });
      pod.status = { ...pod.status, phase };
      await core.replaceNamespacedPodStatus({ name, namespace, body: pod });
    },
    async deletePod(name) {
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    },
    async close() {
      for (const name of nodes) await core.deleteNode({ name, gracePeriodSeconds: 0 }).catch(() => undefined);
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}
