// Whether StatefulSets still exist, by quorum GETs (as ./cluster-reader reads): a sticky
// reservation ends once its StatefulSet is deleted (domain/sticky-addresses).
import type * as Kube from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { isNotFound, kubeCall, type KubeClients } from './kube';

export class StatefulSetReader {
  private readonly apps: Kube.AppsV1Api;

  constructor(private readonly clients: KubeClients) {
    this.apps = clients.config.makeApiClient(clients.kube.AppsV1Api);
  }

  /** Of these `<namespace>/<name>`, those no StatefulSet has now (a quorum GET each). */
  async deleted(statefulSets: readonly string[]): Promise<string[]> {
    const gone: string[] = [];
    for (const ref of statefulSets) if (!(await this.exists(ref))) gone.push(ref);
    return gone;
  }

  private async exists(ref: string): Promise<boolean> {
    const [namespace = '', name = ''] = ref.split('/');
    try {
      await kubeCall(`reading StatefulSet ${ref}`, this.clients.timeouts.callSeconds * 1000, (options) =>
        this.apps.readNamespacedStatefulSet({ name, namespace }, options),
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}
