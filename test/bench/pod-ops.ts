// The API calls a cluster makes for one pod's life, played by the bench (it has no scheduler or
// kubelet): created, bound by the scheduler, status Running from the kubelet, deleted gracefully
// (a bound pod stays Terminating), and removed by the kubelet (grace 0) once its sandbox is gone.
// Every plugin's lifecycle makes the same calls, so each row pays the same pod operations.
import type { KubeClients } from '../../kubernetes/kube';
import { freshPod, type BenchPod } from './plugins';

export interface PodOps {
  namespace: string;
  /** Created unbound, then bound to `node` as kube-scheduler binds it. */
  createBound(node: string): Promise<BenchPod>;
  /** The kubelet's status write once the pod's containers run. */
  markRunning(pod: BenchPod): Promise<void>;
  /** kubectl delete: the pod stays Terminating until its kubelet removes it. */
  deleteGracefully(pod: BenchPod): Promise<void>;
  /** The kubelet's last call once the sandbox is torn down: grace 0, this UID only. */
  remove(pod: BenchPod): Promise<void>;
}

export async function podOps({ core, kube }: KubeClients, namespace: string): Promise<PodOps> {
  const strategicMerge = kube.setHeaderOptions('Content-Type', kube.PatchStrategy.StrategicMergePatch);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return {
    namespace,
    async createBound(node) {
      const pod = freshPod(namespace);
      const { name } = pod;
      const made = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name },
          spec: { containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
        },
      });
      const target = { apiVersion: 'v1', kind: 'Node', name: node };
      await core.createNamespacedPodBinding({ name, namespace, body: { metadata: { name }, target } });
      return { ...pod, uid: made.metadata?.uid ?? '' };
    },
    async markRunning({ name }) {
      // A strategic merge patch, as the kubelet's status manager sends.
      const body = { status: { phase: 'Running' } };
      await core.patchNamespacedPodStatus({ name, namespace, body }, strategicMerge);
    },
    async deleteGracefully({ name }) {
      await core.deleteNamespacedPod({ name, namespace });
    },
    async remove({ name, uid }) {
      // In the body: the API server reads a DELETE's options from its body when it has one.
      const body = { gracePeriodSeconds: 0, preconditions: { uid } };
      await core.deleteNamespacedPod({ name, namespace, body });
    },
  };
}
