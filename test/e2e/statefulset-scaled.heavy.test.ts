// Whereabouts' StatefulSet scenario (issue 29 item 1) with the real StatefulSet controller: 20
// replicas that opt in to sticky addresses, scaled by -5, -10, +20 and deleted: one allocation per
// family per live pod at every step, none for a deleted pod, none after the deletion, and no
// reservation left. The controller makes and deletes the pods in parallel (many ADDs and DELs at once
// on the node), not one by one. Host processes, in the heavy pass (the in-cluster pass skips the file: 25 pods
// on its one node take longer than its budget).
import { useRealCluster } from '../harness/real-cluster';
import { stickyStatefulSets } from '../harness/sticky-statefulsets';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const namespace = 'default';
const nodeName = uniqueName('scaled-node');
const real = useRealCluster({ prefix: 'sts-scaled', nodeNames: [nodeName], reconcileIntervalSeconds: 2 });
const sets = stickyStatefulSets(real, nodeName, namespace);

test('20 replicas scaled by -5, -10, +20, deleted; one allocation per live pod, none left', async () => {
  const name = 'scaled';
  const seen = new Set<string>();
  await sets.create(name, 20, 'Parallel');
  await sets.onePerLivePod(name, 20, seen);
  for (const replicas of [15, 5, 25]) {
    await sets.scale(name, replicas);
    await sets.onePerLivePod(name, replicas, seen);
  }
  await real.apps.deleteNamespacedStatefulSet({ name, namespace });
  await waitForValue(
    () => sets.podsOf(name),
    (items) => items.length === 0,
    240_000,
    500,
    `the pods of ${name} gone`,
  );
  const left = await waitForValue(
    sets.allocationsByPod,
    (byPod) => [...seen].every((uid) => !byPod.has(uid)),
    120_000,
    500,
    `no allocation of ${name}'s pods`,
  );
  expect(seen.size).toBeGreaterThanOrEqual(25);
  expect([...seen].filter((uid) => left.has(uid))).toEqual([]);
  await sets.reservationsEnd(name);
}, 1_200_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 26); // 25 pods' leases and the node's workflow at least
});
