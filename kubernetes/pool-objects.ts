// NetleasePool objects through the API: the status the control worker writes (the watch is
// kubernetes/watch-loop's on POOLS_PATH). A merge patch of the status subresource: the spec is
// the operator's, and a status write never needs the object's resourceVersion.
import { POOL_GROUP, POOL_PLURAL, POOL_VERSION, type PoolObjectStatus } from '../domain/pool-object';
import { kubeCall, type KubeCallOptions, type KubeClients } from './kube';

export async function writePoolStatus(
  clients: KubeClients,
  name: string,
  status: PoolObjectStatus,
): Promise<void> {
  const api = clients.config.makeApiClient(clients.kube.CustomObjectsApi);
  const { setHeaderOptions, PatchStrategy } = clients.kube;
  const mergePatch = (options: KubeCallOptions) =>
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch, options);
  await kubeCall(`patch NetleasePool ${name} status`, clients.timeouts.callSeconds * 1000, (options) =>
    api.patchClusterCustomObjectStatus(
      { group: POOL_GROUP, version: POOL_VERSION, plural: POOL_PLURAL, name, body: { status } },
      mergePatch(options),
    ),
  );
}
