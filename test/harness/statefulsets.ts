// A StatefulSet object for pods to belong to, where no controller runs (the dev stack, the soak):
// it exists, so the reconciler keeps its ordinals' sticky reservations until a test deletes it.
import { isConflict, type KubeClients } from '../../kubernetes/kube';

/** Creates `namespace/name` with no replicas if it is not there; its UID (an ownerReference's). */
export async function ensureStatefulSet(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<string> {
  const apps = clients.config.makeApiClient(clients.kube.AppsV1Api);
  const labels = { 'netlease.test/statefulset': name };
  try {
    const made = await apps.createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: { name },
        spec: {
          replicas: 0,
          serviceName: name,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
          },
        },
      },
    });
    return made.metadata?.uid ?? '';
  } catch (err) {
    if (!isConflict(err)) throw err;
    return (await apps.readNamespacedStatefulSet({ namespace, name })).metadata?.uid ?? '';
  }
}

/** A pod's controller ownerReference to that StatefulSet. */
export const statefulSetOwner = (name: string, uid: string) => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  name,
  uid,
  controller: true,
});

/** Deletes it as `kubectl delete statefulset` does (background: its pods are the GC's, none here). */
export async function deleteStatefulSet(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<void> {
  const apps = clients.config.makeApiClient(clients.kube.AppsV1Api);
  await apps.deleteNamespacedStatefulSet({ namespace, name });
}
