// The test's hand on the cluster (there is no kubelet, scheduler or controller-manager): create
// nodes and pods (optionally with finalizers), set pod phases through the status subresource, and
// delete the way a cluster does: gracefully (a bound pod stays Terminating until its kubelet,
// here the test, deletes it with grace 0) and held by finalizers until they are removed.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectKube, isNotFound, type KubeClients } from '../../kubernetes/kube';
import { ensureStatefulSet, statefulSetOwner } from './statefulsets';

export function kubeconfigPath(): string {
  const path = process.env.NETLEASE_TEST_KUBECONFIG;
  if (!path) throw new Error('NETLEASE_TEST_KUBECONFIG is not set: run tests through jest (global setup)');
  return path;
}

/** The API server's host:port, as the test kubeconfig names it. */
export function apiServerAddress(): string {
  const server = /"server": "https:\/\/([^"]+)"/.exec(readFileSync(kubeconfigPath(), 'utf8'))?.[1];
  if (!server) throw new Error('no server address in the test kubeconfig');
  return server;
}

/** A kubeconfig like the test's that reaches the API server at `address` (a proxy); its path. */
export function kubeconfigThrough(address: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'netlease-kubeconfig-')), 'kubeconfig');
  const config = readFileSync(kubeconfigPath(), 'utf8');
  writeFileSync(file, config.replace(`https://${apiServerAddress()}`, `https://${address}`));
  return file;
}

export interface TestCluster {
  clients: KubeClients;
  namespace: string;
  createNode(name: string, options?: ObjectOptions): Promise<string>;
  /** Grace 0 by default; `graceful`: the API's default grace period. */
  deleteNode(name: string, how?: Deletion): Promise<void>;
  createPod(name: string, nodeName: string, options?: ObjectOptions): Promise<string>;
  setPodPhase(name: string, phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'): Promise<void>;
  /** One update (one MODIFIED event) that changes nothing netlease reads; the new resourceVersion. */
  labelPod(name: string, value: string): Promise<number>;
  /** Merges labels and annotations into the test's namespace (pool selection reads them). */
  markNamespace(metadata: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  }): Promise<void>;
  /** Grace 0 by default (what the kubelet does last); `graceful`: the pod stays Terminating. */
  deletePod(name: string, how?: Deletion): Promise<void>;
  /** Removes every finalizer: a Terminating object then goes away. */
  clearPodFinalizers(name: string): Promise<void>;
  clearNodeFinalizers(name: string): Promise<void>;
  /** Whether the object is there, and Terminating (deletionTimestamp set). */
  podState(name: string): Promise<ObjectState>;
  nodeState(name: string): Promise<ObjectState>;
  close(): Promise<void>;
}

export interface ObjectOptions {
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Pods only: on the node's network (no CNI call). */
  hostNetwork?: boolean;
  /** Pods only: the StatefulSet that controls it, created if not there (no controller acts on it). */
  statefulSet?: string;
}

export type Deletion = 'now' | 'graceful';

export type ObjectState = 'present' | 'terminating' | 'absent';

async function stateOf(read: () => Promise<{ metadata?: { deletionTimestamp?: unknown } }>) {
  try {
    return (await read()).metadata?.deletionTimestamp ? 'terminating' : 'present';
  } catch (err) {
    if (isNotFound(err)) return 'absent';
    throw err;
  }
}

/** A finalizer only tests set and clear: it holds an object Terminating. */
export const TEST_FINALIZER = 'netlease.test/hold';

const graceOf = (how: Deletion = 'now') => (how === 'now' ? { gracePeriodSeconds: 0 } : {});
const noFinalizers = [{ op: 'replace', path: '/metadata/finalizers', value: [] }];

export async function testCluster(prefix: string): Promise<TestCluster> {
  const clients = await connectKube(kubeconfigPath());
  const { core } = clients;
  const namespace = `${prefix}-${randomUUID().slice(0, 8)}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const nodes = new Set<string>();
  return {
    clients,
    namespace,
    async createNode(name, options = {}) {
      const { finalizers, labels, annotations } = options;
      const node = await core.createNode({ body: { metadata: { name, finalizers, labels, annotations } } });
      nodes.add(name);
      return node.metadata?.uid ?? '';
    },
    async deleteNode(name, how) {
      await core.deleteNode({ name, ...graceOf(how) });
    },
    async createPod(name, nodeName, options = {}) {
      const { statefulSet } = options;
      const owner = statefulSet
        ? [statefulSetOwner(statefulSet, await ensureStatefulSet(clients, namespace, statefulSet))]
        : undefined;
      const pod = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name,
            finalizers: options.finalizers,
            labels: options.labels,
            annotations: options.annotations,
            ...(owner ? { ownerReferences: owner } : {}),
          },
          spec: {
            nodeName,
            hostNetwork: options.hostNetwork,
            containers: [{ name: 'c', image: 'registry.invalid/pause:1' }],
          },
        },
      });
      return pod.metadata?.uid ?? '';
    },
    async setPodPhase(name, phase) {
      const pod = await core.readNamespacedPodStatus({ name, namespace });
      pod.status = { ...pod.status, phase };
      await core.replaceNamespacedPodStatus({ name, namespace, body: pod });
    },
    async labelPod(name, value) {
      const body = [{ op: 'add', path: '/metadata/labels', value: { step: value } }];
      const pod = await core.patchNamespacedPod({ name, namespace, body }, jsonPatch(clients));
      return Number(pod.metadata?.resourceVersion ?? 0);
    },
    async markNamespace(metadata) {
      const body = { metadata };
      await core.patchNamespace({ name: namespace, body }, mergePatch(clients));
    },
    async deletePod(name, how) {
      await core.deleteNamespacedPod({ name, namespace, ...graceOf(how) });
    },
    async clearPodFinalizers(name) {
      await core.patchNamespacedPod({ name, namespace, body: noFinalizers }, jsonPatch(clients));
    },
    async clearNodeFinalizers(name) {
      await core.patchNode({ name, body: noFinalizers }, jsonPatch(clients));
    },
    podState: (name) => stateOf(() => core.readNamespacedPod({ name, namespace })),
    nodeState: (name) => stateOf(() => core.readNode({ name })),
    async close() {
      for (const name of nodes) {
        await core.patchNode({ name, body: noFinalizers }, jsonPatch(clients)).catch(() => undefined);
        await core.deleteNode({ name, gracePeriodSeconds: 0 }).catch(() => undefined);
      }
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}

/** client-node 1.x sends patches as merge patches unless told otherwise. */
function jsonPatch({ kube }: KubeClients) {
  return kube.setHeaderOptions('Content-Type', kube.PatchStrategy.JsonPatch);
}

export function mergePatch({ kube }: KubeClients) {
  return kube.setHeaderOptions('Content-Type', kube.PatchStrategy.MergePatch);
}
