// Leases closed without returning their addresses (terminated from the UI, failed) are collected
// (issue 25 item 6) the way release follows the pod: a pod that is gone gives its addresses back
// to the node; a pod that still runs gets its lease started again, with the same addresses, so
// its address is never handed to another pod. And the reconciler's sweep releases a lease only
// when a second quorum read, after a grace, still finds no pod with its UID.
import { MockActivityEnvironment } from '@temporalio/testing';
import type { PodFact } from '../../domain/k8s';
import { reconcileActivities, type ReconcileSummary } from '../../activities/reconcile';
import { leakedAddressesCollected } from '../../observability/control-metrics';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { connectKube } from '../../kubernetes/kube';
import { kubeconfigPath } from '../harness/kube';

/** The counter's total (the control worker runs in this process: its registry is this one). */
const collectedCount = async () =>
  (await leakedAddressesCollected.get()).values.reduce((sum, v) => sum + v.value, 0);

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('leaks', { watch: false, reuseCooldownSeconds: 1 })));
afterAll(async () => scenario?.close());

async function podWithLease(prefix: string) {
  const node = uniqueName(prefix);
  await scenario.cluster.createNode(node);
  const name = uniqueName(prefix);
  const uid = await scenario.cluster.createPod(name, node);
  const addresses = (await scenario.add(name, uid, node)).map((g) => g.address);
  await scenario.listed(uid);
  return { node, name, uid, addresses };
}

test('a terminated lease whose pod is gone: its addresses go back to the node (seen red: held forever)', async () => {
  const pod = await podWithLease('gone');
  const collectedBefore = await collectedCount();
  await scenario.lease(pod.uid).terminate('pressed Terminate');
  await scenario.cluster.deletePod(pod.name);
  const summary = await scenario.reconcile();
  expect(summary.leaksCollected).toBe(1);
  const table = await scenario.table(pod.node);
  for (const address of pod.addresses) {
    expect(table?.allocations[address]).toBeUndefined();
    expect(table?.cooldowns[address]).toBeGreaterThan(0); // cools down before it is handed out again
  }
  expect((await collectedCount()) - collectedBefore).toBe(pod.addresses.length);
}, 120_000);

test('a terminated lease whose pod runs: started again with the same addresses and sandbox, never collected', async () => {
  const pod = await podWithLease('alive');
  await scenario.cluster.setPodPhase(pod.name, 'Running');
  await scenario.reconcile(); // no watcher here: the reconciler confirms Running
  const before = await scenario.waitForPhase(pod.uid, 'Running');
  await scenario.lease(pod.uid).terminate('pressed Terminate');
  const summary = await scenario.reconcile();
  expect(summary.leasesRecovered).toBe(1);
  expect(summary.leaksCollected ?? 0).toBe(0);
  const again = await scenario.waitForPhase(pod.uid, 'Running');
  expect(again.addresses).toEqual(before.addresses);
  expect(again.attachments.map((a) => a.containerId)).toEqual(before.attachments.map((a) => a.containerId));
  expect(await scenario.owners(pod.node, pod.addresses)).toEqual(
    pod.addresses.map(() => `lease/${pod.uid}/eth0`),
  );
  // Once the pod goes, the new run is released as any lease is.
  await scenario.deletedAndReleased(pod);
}, 120_000);

test('the sweep releases only a pod seen gone twice: a list that missed it is corrected by the second look', async () => {
  const pod = await podWithLease('twice');
  const kube = await connectKube(kubeconfigPath());
  // A list that lacks the pod (a partial or lagging list) beside the real quorum reads.
  const real = new ClusterReader(kube.core);
  const missing = Object.assign(Object.create(real) as ClusterReader, {
    listPods: async (): Promise<PodFact[]> => (await real.listPods()).filter((p) => p.uid !== pod.uid),
  });
  const { reconcileCluster } = reconcileActivities({
    client: scenario.temporal.client,
    config: {
      ...scenario.config,
      kubernetes: { ...scenario.config.kubernetes, releaseGraceSeconds: 0.2 },
    } as never,
    reader: missing,
  });
  const summary = (await new MockActivityEnvironment().run(reconcileCluster)) as ReconcileSummary;
  expect(summary.secondLookAlive).toBe(1);
  expect(summary.released).toBe(0);
  expect((await scenario.leaseState(pod.uid)).phase).toBe('Active');
  // Gone for real: both looks agree, and the lease is released.
  await scenario.cluster.deletePod(pod.name);
  const gone = (await new MockActivityEnvironment().run(reconcileCluster)) as ReconcileSummary;
  expect(gone.released).toBe(1);
  await waitForValue(
    () => scenario.leaseState(pod.uid),
    (s) => s.phase === 'Released',
    30_000,
  );
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 6);
});
