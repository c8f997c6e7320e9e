// The cluster's side of the soak's pods: created bound to a node, made Running, deleted (grace 0,
// gracefully, or held by a finalizer), each Kubernetes call retried while the API restarts.
import { ensureStatefulSet, statefulSetOwner } from '../harness/statefulsets';
import { isAnswer, retried } from './kube-retry';
import type { SoakStack } from './stack';

export const SOAK_NAMESPACE = 'soak';
const FINALIZER = 'netlease.soak/hold';

export type Deletion = 'now' | 'graceful' | 'finalizer';

/** What a pod carries besides its name: annotations, and the StatefulSet that controls it. */
export interface PodExtras {
  annotations?: Record<string, string>;
  statefulSet?: string;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Pods {
  constructor(private readonly stack: SoakStack) {}

  private get core() {
    return this.stack.kubeClients.core;
  }

  private kube<T>(what: string, call: () => Promise<T>): Promise<T> {
    return retried(what, call);
  }

  async createNamespace(): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name: SOAK_NAMESPACE } } });
  }

  /** A name still held by its previous pod (Terminating) is tried again, as a StatefulSet waits. */
  async create(name: string, node: string, finalizer: boolean, extras: PodExtras = {}): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.createOnce(name, node, finalizer, extras);
      } catch (err) {
        if ((err as { code?: unknown }).code !== 409 || attempt >= 30) throw err;
        await pause(1000);
      }
    }
  }

  private async createOnce(
    name: string,
    node: string,
    finalizer: boolean,
    extras: PodExtras,
  ): Promise<string> {
    const { statefulSet } = extras;
    // The StatefulSet object exists (no controller acts on it): the reconciler keeps its reservations.
    const owner = statefulSet
      ? [
          statefulSetOwner(
            statefulSet,
            await this.kube('create statefulset', () =>
              ensureStatefulSet(this.stack.kubeClients, SOAK_NAMESPACE, statefulSet),
            ),
          ),
        ]
      : undefined;
    const pod = await this.kube('create pod', () =>
      this.core.createNamespacedPod({
        namespace: SOAK_NAMESPACE,
        body: {
          metadata: {
            name,
            finalizers: finalizer ? [FINALIZER] : undefined,
            annotations: extras.annotations,
            ownerReferences: owner,
          },
          spec: {
            nodeName: node,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'c', image: 'registry.invalid/pause:1' }],
          },
        },
      }),
    );
    return pod.metadata?.uid ?? '';
  }

  async setRunning(name: string): Promise<void> {
    await this.kube('pod status', async () => {
      const pod = await this.core.readNamespacedPodStatus({ name, namespace: SOAK_NAMESPACE });
      pod.status = { ...pod.status, phase: 'Running' };
      await this.core.replaceNamespacedPodStatus({ name, namespace: SOAK_NAMESPACE, body: pod });
    });
  }

  /** Deletes the pod of this UID (grace: the pod's own when undefined); gone already is fine. */
  async remove(name: string, uid: string, grace?: number): Promise<void> {
    await this.kube('delete pod', () =>
      this.core.deleteNamespacedPod({
        name,
        namespace: SOAK_NAMESPACE,
        body: { preconditions: { uid }, ...(grace === undefined ? {} : { gracePeriodSeconds: grace }) },
      }),
    ).catch((err: unknown) => {
      if (!isAnswer(err)) throw err; // gone already, or another pod of that name now
    });
  }

  async clearFinalizer(name: string, uid: string): Promise<void> {
    const { kube } = this.stack.kubeClients;
    const patch = kube.setHeaderOptions('Content-Type', kube.PatchStrategy.JsonPatch);
    await this.kube('clear finalizer', () =>
      this.core.patchNamespacedPod(
        {
          name,
          namespace: SOAK_NAMESPACE,
          body: [
            { op: 'test', path: '/metadata/uid', value: uid },
            { op: 'replace', path: '/metadata/finalizers', value: [] },
          ],
        },
        patch,
      ),
    ).catch(() => undefined); // gone already, or another pod of that name now
  }

  /** Force-deleted, finalizer cleared: the pod GC's part for a node that went. */
  async forceRemove(name: string, uid: string): Promise<void> {
    await this.remove(name, uid, 0);
    await this.clearFinalizer(name, uid);
  }

  /** The pods bound to `node` (a quorum list); every pod of the namespace without one. */
  async list(node?: string): Promise<Array<{ name: string; uid: string }>> {
    const pods = await this.kube('list pods', () =>
      this.core.listNamespacedPod({
        namespace: SOAK_NAMESPACE,
        ...(node ? { fieldSelector: `spec.nodeName=${node}` } : {}),
      }),
    );
    return pods.items.map((p) => ({ name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' }));
  }
}
