// StatefulSets whose pods opt in to sticky addresses, driven on the real cluster through the API
// only (the real StatefulSet controller makes and deletes their pods), and what a test reads of
// them: the pods' podIPs, the pool's reservations, the node's allocations by pod.
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { nodeStateQuery } from '../../workflows/node-messages';
import { reservationsQuery } from '../../workflows/pool-messages';
import { mergePatch } from './kube';
import type { RealCluster } from './real-cluster';
import { waitForValue } from './wait';

const sorted = (values: string[]) => [...values].sort();
export const podIps = (pod: V1Pod | undefined): string[] =>
  sorted((pod?.status?.podIPs ?? []).map((p) => p.ip));

/** The StatefulSets of one node's real cluster, in `namespace`. */
export function stickyStatefulSets(real: RealCluster, nodeName: string, namespace = 'default') {
  const podsOf = async (name: string) =>
    (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${name}` })).items;
  const reservations = () =>
    real.temporal.client.workflow.getHandle(poolWorkflowId(real.temporal.taskQueue)).query(reservationsQuery);

  /** The set's Running pods (not being deleted) by name → UID and podIPs, once there are `count`, `except` UIDs aside. */
  async function runningIps(name: string, count: number, except: string[] = []) {
    const pods = await waitForValue(
      () => podsOf(name),
      (items) =>
        items.filter(
          (p) =>
            p.status?.phase === 'Running' &&
            !p.metadata?.deletionTimestamp &&
            !except.includes(p.metadata?.uid ?? '') &&
            podIps(p).length === 2,
        ).length === count && items.length === count,
      240_000,
      500,
      `${count} Running pods of ${name}`,
    );
    return new Map(pods.map((p) => [p.metadata?.name ?? '', { uid: p.metadata?.uid ?? '', ips: podIps(p) }]));
  }

  /** The node's allocations by pod UID (its pool's table). */
  async function allocationsByPod(): Promise<Map<string, string[]>> {
    const handle = real.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName));
    const table = (await handle.query(nodeStateQuery)).tables[real.temporal.taskQueue];
    const byPod = new Map<string, string[]>();
    for (const a of Object.values(table?.allocations ?? {}))
      byPod.set(a.podUid, [...(byPod.get(a.podUid) ?? []), a.address].sort());
    return byPod;
  }

  return {
    podsOf,
    runningIps,
    reservations,
    allocationsByPod,

    /**
     * `replicas` sleeping busybox pods of StatefulSet `name`, whose template opts in to sticky
     * addresses; `Parallel`: the controller makes and deletes its pods at once, not one by one.
     */
    create: (
      name: string,
      replicas: number,
      podManagementPolicy: 'OrderedReady' | 'Parallel' = 'OrderedReady',
    ) =>
      real.apps.createNamespacedStatefulSet({
        namespace,
        body: {
          metadata: { name },
          spec: {
            replicas,
            podManagementPolicy,
            serviceName: name,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name }, annotations: { 'netlease.io/sticky-addresses': 'true' } },
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [
                  {
                    name: 'main',
                    image: BUSYBOX_IMAGE,
                    imagePullPolicy: 'Never',
                    command: ['sleep', '3600'],
                  },
                ],
              },
            },
          },
        },
      }),

    scale: (name: string, replicas: number) =>
      real.apps.patchNamespacedStatefulSet(
        { name, namespace, body: { spec: { replicas } } },
        mergePatch(real.kube),
      ),

    /** Once settled: each live pod of the set holds its two addresses, and no pod in `gone` holds any. */
    async onePerLivePod(name: string, count: number, gone: Set<string>): Promise<void> {
      const live = await runningIps(name, count);
      const uids = new Set([...live.values()].map((p) => p.uid));
      const settled = await waitForValue(
        allocationsByPod,
        (byPod) => [...gone].every((uid) => !byPod.has(uid) || uids.has(uid)),
        120_000,
        500,
        `no allocation of a deleted pod of ${name}`,
      );
      for (const { uid, ips } of live.values()) expect(settled.get(uid)).toEqual(ips);
      for (const uid of uids) gone.add(uid);
    },

    /** The StatefulSet deleted, its pods collected: the reconciler's sweep ends its ordinals' reservations. */
    async reservationsEnd(name: string): Promise<void> {
      await waitForValue(
        reservations,
        (r) => Object.keys(r).every((key) => !key.startsWith(`${namespace}/${name}/`)),
        240_000,
        1000,
        `the reservations of ${name} ended`,
      );
    },
  };
}
