// Seed 002 (Kubernetes): an old object (lower resourceVersion, or a listing from before a
// delete + recreate under the same name) must not release or hand out anything.
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { PodEvents } from '../../worker/control/watchers/pod-events';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('s002', { watch: false })));
afterAll(async () => scenario?.close());

test('002 stale pod objects are ignored or verified away', async () => {
  const { cluster } = scenario;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid1 = await cluster.createPod('pod-0', node);
  await scenario.add('pod-0', uid1, node);
  const staleListing = await cluster.clients.core.readNamespacedPod({
    name: 'pod-0',
    namespace: cluster.namespace,
  });
  await cluster.deletePod('pod-0');
  const uid2 = await cluster.createPod('pod-0', node);
  const addresses2 = await scenario.add('pod-0', uid2, node);
  await cluster.setPodPhase('pod-0', 'Running');
  const current = await cluster.clients.core.readNamespacedPod({
    name: 'pod-0',
    namespace: cluster.namespace,
  });
  const nodeBefore = await scenario.nodeState(node);

  const events = new PodEvents(
    new ClusterReader(cluster.clients.core),
    scenario.temporal.client,
    scenario.temporal.taskQueue,
  );
  // The current object first, so the handler has seen its resourceVersion.
  expect(await events.handle('MODIFIED', current)).toBe('running');
  const rv = BigInt(current.metadata?.resourceVersion ?? '0');
  const older = { ...current, metadata: { ...current.metadata, resourceVersion: String(rv - 1n) } };
  expect(await events.handle('DELETED', older)).toBe('stale');
  expect(await events.handle('MODIFIED', { ...older, status: { phase: 'Failed' } })).toBe('stale');
  // A deletion hint without a usable resourceVersion is checked by a quorum read: uid2 is alive.
  const unversioned = { ...current, metadata: { ...current.metadata, resourceVersion: undefined } };
  expect(await events.handle('DELETED', unversioned)).toBe('alive');
  // A listing from before the delete + recreate: same name, old UID, shown Running. It confirms
  // nothing; its verifying read finds the name held by uid2, so uid1's lease (whose pod is gone,
  // as the quorum read shows) is released, and nothing is handed out.
  expect(await events.handle('MODIFIED', { ...staleListing, status: { phase: 'Running' } })).toBe('released');
  const state1 = await scenario.waitForPhase(uid1, 'Released');
  expect(state1.releaseReason).toBe(`watcher: pod ${cluster.namespace}/pod-0 now has uid ${uid2}`);

  const state2 = await scenario.waitForPhase(uid2, 'Running');
  expect(state2.addresses).toEqual(addresses2);
  const nodeAfter = await scenario.nodeState(node);
  const pool = scenario.temporal.taskQueue;
  const stillHeld = Object.fromEntries(
    Object.entries(nodeBefore.tables[pool]?.allocations ?? {}).filter(([, a]) => a.podUid !== uid1),
  );
  expect(nodeAfter.tables[pool]?.allocations).toEqual(stillHeld);
  expect(Object.keys(stillHeld)).toHaveLength(addresses2.length);
  expect(nodeAfter.blockRequests).toBe(nodeBefore.blockRequests);
}, 180_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 2);
});
