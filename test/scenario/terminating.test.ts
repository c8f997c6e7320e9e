// Deleted the way a cluster deletes: a bound pod stays Terminating for its grace period, and a
// finalizer holds a pod or a Node after that. A Terminating object still exists: its lease is kept,
// and nothing about it may stop the reconciler, the watchers or an ADD (the client returns
// deletionTimestamp as a Date). A terminal pod whose event was missed is released by the reconciler.
import { expectReplayed } from '../harness/replay';
import { TEST_FINALIZER } from '../harness/kube';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

let level: Scenario; // no watchers: only the reconciler acts
let edge: Scenario; // watchers on, reconciler schedule far away
beforeAll(async () => {
  level = await Scenario.create('term-level', { watch: false });
  edge = await Scenario.create('term-edge', { watch: true });
});
afterAll(async () => {
  await level?.close();
  await edge?.close();
});

const held = { finalizers: [TEST_FINALIZER] };

test('a Terminating pod keeps its lease and does not stop the reconciler', async () => {
  const { cluster } = level;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const terminating = await cluster.createPod('terminating', node, held);
  const missed = await cluster.createPod('missed', node);
  const kept = await level.add('terminating', terminating, node);
  await level.add('missed', missed, node);

  await cluster.deletePod('terminating', 'graceful');
  expect(await cluster.podState('terminating')).toBe('terminating');
  await cluster.deletePod('missed');
  await level.listed(terminating, missed);
  const first = await level.reconcile();
  expect(first.released).toBe(1);
  await level.waitForPhase(missed, 'Released');

  // The kubelet's last word (grace 0) still leaves it to the finalizer.
  await cluster.deletePod('terminating');
  expect(await cluster.podState('terminating')).toBe('terminating');
  expect((await level.reconcile()).released).toBe(0);
  const state = await level.leaseState(terminating);
  expect(state.phase).toBe('Active');
  expect(state.addresses).toEqual(kept);

  await cluster.clearPodFinalizers('terminating');
  expect((await level.reconcile()).released).toBe(1);
  expect((await level.waitForPhase(terminating, 'Released')).releaseReason).toMatch(/no longer exists/);
}, 180_000);

test('a terminal pod whose watch event was missed is released by the reconciler', async () => {
  const { cluster } = level;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const done = await cluster.createPod('done', node);
  const running = await cluster.createPod('running', node);
  await level.add('done', done, node);
  await level.add('running', running, node);
  await cluster.setPodPhase('done', 'Succeeded');
  await cluster.setPodPhase('running', 'Running');
  await level.listed(done, running);

  const summary = await level.reconcile();
  expect(summary.released).toBe(1);
  expect(summary.confirmedRunning).toBe(1);
  expect((await level.waitForPhase(done, 'Released')).releaseReason).toMatch(/is Succeeded/);
  await level.waitForPhase(running, 'Running');
}, 120_000);

test('an ADD on a Node held by a finalizer completes; the Node going away keeps it while the pod exists', async () => {
  const { cluster } = level;
  const node = uniqueName('node');
  await cluster.createNode(node, held);
  await cluster.deleteNode(node, 'graceful');
  expect(await cluster.nodeState(node)).toBe('terminating');
  const uid = await cluster.createPod('on-terminating-node', node);
  const added = await Promise.race([
    level.add('on-terminating-node', uid, node),
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 30_000).unref()),
  ]);
  expect(added).not.toBe('timeout');
  expect((await level.leaseState(uid)).phase).toBe('Active');
  expect((await level.reconcile()).nodesDeleted).toBe(0);

  await cluster.clearNodeFinalizers(node);
  expect(await cluster.nodeState(node)).toBe('absent');
  // The reconciler, or any watcher of this shared apiserver (node ids are cluster-wide), tells
  // node/<name>; the incarnation is compensated, but release follows the pod: it still exists.
  // The reconciler runs again until it does, as its schedule would: it finds node/<name> through
  // visibility, which on the production server lags while visibility-lag.production holds its
  // table (a CI's run missed the node and waited in vain).
  await waitForValue(
    async () => (await level.reconcile(), await level.nodeState(node)),
    (s) => s.incarnation === '' && Object.keys(s.retired).length === 1,
    60_000,
    1000,
  );
  expect((await level.leaseState(uid)).phase).toBe('Active');
  await cluster.deletePod('on-terminating-node');
  const released = await level.waitForPhase(uid, 'Released', 90_000);
  expect(released.releaseReason).toMatch(/no longer exists/);
}, 180_000);

test('the watchers read Terminating pods: kept while running, released once its containers ended', async () => {
  const { cluster } = edge;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('watched', node, held);
  await edge.add('watched', uid, node);
  await cluster.setPodPhase('watched', 'Running');
  await edge.waitForPhase(uid, 'Running');

  await cluster.deletePod('watched', 'graceful');
  await cluster.deletePod('watched');
  expect(await cluster.podState('watched')).toBe('terminating');
  // Its containers end during the grace period; a finalizer still holds the object. Only the
  // watcher can release it here (the reconciler runs hourly in this scenario).
  await cluster.setPodPhase('watched', 'Succeeded');
  const state = await edge.waitForPhase(uid, 'Released', 30_000);
  expect(state.releaseReason).toMatch(/is Succeeded/);
  expect(await cluster.podState('watched')).toBe('terminating');
  await cluster.clearPodFinalizers('watched');
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(level.temporal, 8);
  await expectReplayed(edge.temporal, 2);
});
