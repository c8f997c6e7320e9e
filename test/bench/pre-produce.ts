// Pods bound to the bench's node, created in the apiserver as a scheduler would bind them; the
// node agent (with `preProduce`) starts their leases and produces their addresses before any ADD.
// Ready once visibility counts that many more Produced leases on the node and the agent holds
// that many offers on disk (each pod's first ADD is answered from its offer).
import { readdirSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { KubeClients } from '../../kubernetes/kube';
import { waitFor } from '../../tools/processes';
import { inBatches } from '../harness/shim';
import { freshPod, type BenchPod } from './plugins';
import { NODE } from './stack';

const NAMESPACE = 'bench-pre';
const producedQuery = `WorkflowType = 'leaseWorkflow' AND NodeName = '${NODE}' AND LeasePhase = 'Produced'`;

async function createPods({ core }: KubeClients, count: number): Promise<BenchPod[]> {
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const create = async (): Promise<BenchPod> => {
    const pod = freshPod(NAMESPACE);
    const made = await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: pod.name },
        spec: { nodeName: NODE, containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
      },
    });
    return { ...pod, uid: made.metadata?.uid ?? '' };
  };
  return inBatches(
    Array.from({ length: count }, () => create),
    8,
  );
}

/** The pods, or why there are none: no lease became Produced for `stallMs`, or not all by `timeoutMs`. */
const offersOnDisk = (dir: string) => {
  try {
    return readdirSync(dir).filter((name) => name.endsWith('.json')).length;
  } catch {
    return 0;
  }
};

export async function preProducedPods(
  clients: KubeClients,
  client: Client,
  offerDir: string,
  count: number,
  timeoutMs: number,
  stallMs = 60_000,
): Promise<BenchPod[] | string> {
  const counted = async () => (await client.workflow.count(producedQuery)).count;
  const before = await counted();
  const pods = await createPods(clients, count);
  let produced = 0;
  let progressAt = Date.now();
  const progress = async () => {
    const now = Math.min((await counted()) - before, offersOnDisk(offerDir));
    if (now > produced) [produced, progressAt] = [now, Date.now()];
    return produced >= count || Date.now() - progressAt > stallMs;
  };
  await waitFor(progress, timeoutMs, 1000);
  if (produced >= count) return pods;
  return `${produced} of ${count} pods' leases Produced (waited up to ${timeoutMs / 1000} s, ${stallMs / 1000} s without progress)`;
}
