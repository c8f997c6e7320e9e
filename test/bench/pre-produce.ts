// Pods bound to one of the bench's nodes, created in the apiserver as a scheduler would bind them;
// that node's agent (with `preProduce`) starts their leases and produces their addresses before any
// ADD. Ready once visibility counts that many more Produced leases on the node and the agent holds
// that many offers on disk (each pod's first ADD is answered from its offer).
import type { Client } from '@temporalio/client';
import type { KubeClients } from '../../kubernetes/kube';
import { waitFor } from '../../tools/processes';
import { offersOnDisk } from '../harness/offers';
import { inBatches } from '../harness/shim';
import { freshPod, type BenchPod } from './plugins';

/** Where the pods go and where their agent holds offers. */
export interface PreProducedSite {
  node: string;
  namespace: string;
  offerDir: string;
}

async function createPods({ core }: KubeClients, site: PreProducedSite, count: number): Promise<BenchPod[]> {
  await core.createNamespace({ body: { metadata: { name: site.namespace } } });
  const create = async (): Promise<BenchPod> => {
    const pod = freshPod(site.namespace);
    const made = await core.createNamespacedPod({
      namespace: site.namespace,
      body: {
        metadata: { name: pod.name },
        spec: { nodeName: site.node, containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
      },
    });
    return { ...pod, uid: made.metadata?.uid ?? '' };
  };
  return inBatches(
    Array.from({ length: count }, () => create),
    8,
  );
}

/** The pods, or why there are none: nothing progressed for `stallMs`, or not all by `timeoutMs`. */
export async function preProducedPods(
  clients: KubeClients,
  client: Client,
  site: PreProducedSite,
  count: number,
  timeoutMs: number,
  stallMs = 60_000,
): Promise<BenchPod[] | string> {
  const query = `WorkflowType = 'leaseWorkflow' AND NodeName = '${site.node}' AND LeasePhase = 'Produced'`;
  const counted = async () => (await client.workflow.count(query)).count;
  const before = await counted();
  const pods = await createPods(clients, site, count);
  let produced = 0;
  let progressAt = Date.now();
  const progress = async () => {
    const now = Math.min((await counted()) - before, await offersOnDisk(site.offerDir));
    if (now > produced) [produced, progressAt] = [now, Date.now()];
    return produced >= count || Date.now() - progressAt > stallMs;
  };
  await waitFor(progress, timeoutMs, 1000);
  if (produced >= count) return pods;
  return `${produced} of ${count} pods' leases Produced and offered (waited up to ${timeoutMs / 1000} s, ${stallMs / 1000} s without progress)`;
}
