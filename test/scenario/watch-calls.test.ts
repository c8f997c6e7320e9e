// Keys, not events (issue 27): what the control worker's watches cost per event, counted by gRPC
// method against the real Temporal server and by quorum read against the real kube-apiserver. A
// pod's leases are read by id (a describe per interface), never by a visibility list; the quorum
// read is made only when the watched state says a lease lacks something, and each lease hears
// podRunning and release once. A Node the node workflow already holds costs a describe, no read and
// no signal. A lease on an interface the watcher does not read is the reconciler's sweep's.
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';
import { waitFor } from '../../tools/processes';
import { NodeEvents } from '../../worker/control/watchers/node-events';
import { PodEvents } from '../../worker/control/watchers/pod-events';
import { countingClient, type CountingClient } from '../harness/counting-client';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { signalsIn } from '../harness/worker-tasks';

let quiet: Scenario; // no watches in its worker: the test runs them, counting
let watching: Scenario; // its control worker watches, with the default kubernetes.podInterfaces
let counting: CountingClient;
const loops: WatchLoop[] = [];
beforeAll(async () => {
  quiet = await Scenario.create('calls', { watch: false });
  watching = await Scenario.create('calls-w', { watch: true });
  counting = await countingClient();
});
afterAll(async () => {
  for (const loop of loops) loop.stop();
  await counting?.client.connection.close();
  await quiet?.close();
  await watching?.close();
});

/** gRPC calls the counting client made since `before`, by method (only those made). */
function callsSince(before: Map<string, number>): Record<string, number> {
  const since: Record<string, number> = {};
  for (const [method, count] of counting.calls) {
    const made = count - (before.get(method) ?? 0);
    if (made > 0) since[method] = made;
  }
  return since;
}

/** Signals a lease's run received, by name, from its history. */
async function signalsTo(scenario: Scenario, uid: string): Promise<Record<string, number>> {
  const history = await scenario.lease(uid).fetchHistory();
  const byName: Record<string, number> = {};
  for (const [key, count] of signalsIn(history)) {
    const name = key.split(' from ')[0] ?? key;
    byName[name] = (byName[name] ?? 0) + count;
  }
  return byName;
}

/** The watch loop of `handle` on `path`, as the control worker runs it; outcomes recorded. */
function watch<T>(path: string, handle: (type: string, object: unknown) => Promise<T>) {
  const outcomes: T[] = [];
  const errors: unknown[] = [];
  const loop = watchForever(
    quiet.cluster.clients,
    path,
    async (type, object) => outcomes.push(await handle(type, object)),
    (err) => errors.push(err),
    { concurrency: 16 },
  );
  loops.push(loop);
  /** Until the loop has had `events` events (or `deleted` deletions) and handled them all. */
  const settled = async (events: number, deleted = 0) => {
    const done = () => loop.stats.events >= events && loop.stats.deleted >= deleted && loop.pending === 0;
    expect(await waitFor(done, 30_000)).toBe(true);
  };
  return { loop, outcomes, errors, settled };
}

test("a pod's lifecycle: its lease read by id for each event, no visibility list; one podRunning, one release", async () => {
  const { cluster } = quiet;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const reader = new ClusterReader(cluster.clients.core, cluster.clients.timeouts);
  const quorumReads = jest.spyOn(reader, 'readPod'); // counts, and reads for real
  const pods = new PodEvents(reader, counting.client, quiet.temporal.taskQueue);
  const before = new Map(counting.calls);
  const { loop, outcomes, errors, settled } = watch(`/api/v1/namespaces/${cluster.namespace}/pods`, (t, o) =>
    pods.handle(t, o),
  );

  const uid = await cluster.createPod('life', node);
  await quiet.add('life', uid, node);
  await cluster.setPodPhase('life', 'Running'); // the kubelet: the containers started
  await quiet.waitForPhase(uid, 'Running');
  await settled(2);
  for (let step = 1; step <= 3; step++) {
    await cluster.labelPod('life', String(step)); // status and label updates netlease has no use for
    await settled(2 + step);
  }
  await cluster.deletePod('life', 'graceful'); // Terminating, still Running
  await settled(6);
  await cluster.setPodPhase('life', 'Succeeded'); // the kubelet: the containers ended
  await quiet.waitForPhase(uid, 'Released');
  await settled(7);
  await cluster.deletePod('life'); // the kubelet's last word
  await settled(8, 1);
  loop.stop();

  const calls = callsSince(before);
  const reconciled = outcomes.filter((o) => o !== 'ignored' && o !== 'stale').length;
  process.stdout.write(
    `pod lifecycle: ${loop.stats.events} events, ${reconciled} reconciled; ` +
      `quorum reads ${quorumReads.mock.calls.length}; gRPC calls ${JSON.stringify(calls)}\n`,
  );
  expect(errors).toEqual([]);
  expect(calls.ListWorkflowExecutions ?? 0).toBe(0);
  expect(calls.DescribeWorkflowExecution).toBe(reconciled); // one interface: one describe each
  expect(calls.SignalWorkflowExecution).toBe(2);
  expect(await signalsTo(quiet, uid)).toEqual({ podRunning: 1, release: 1 });
  // Only the events that said a lease lacked something were read by quorum: Running, Succeeded.
  expect(quorumReads.mock.calls.length).toBe(2);
  expect(outcomes.filter((o) => o === 'running' || o === 'released').sort()).toEqual(['released', 'running']);
  expect((await quiet.leaseState(uid)).releaseReason).toBe(
    `watcher: pod ${cluster.namespace}/life is Succeeded`,
  );
}, 120_000);

test('a Node the node workflow holds costs its watch a describe: no quorum read, no signal; a replaced one is told', async () => {
  const { cluster } = quiet;
  const nodes = [uniqueName('node'), uniqueName('node'), uniqueName('node')];
  const uids: string[] = [];
  for (const [i, node] of nodes.entries()) {
    uids.push(await cluster.createNode(node));
    const pod = await cluster.createPod(`on-${i}`, node);
    await quiet.add(`on-${i}`, pod, node); // the ADD starts node/<name>, which observes its UID
  }
  for (const [i, node] of nodes.entries()) expect((await quiet.nodeState(node)).incarnation).toBe(uids[i]);
  const reader = new ClusterReader(cluster.clients.core, cluster.clients.timeouts);
  const quorumReads = jest.spyOn(reader, 'nodeUid');
  const watcher = new NodeEvents(reader, counting.client, quiet.temporal.taskQueue);
  const before = new Map(counting.calls);
  // The watch opens with a list: every Node of the cluster ADDED, ours among them.
  const { loop, outcomes, errors, settled } = watch('/api/v1/nodes', (t, o) => watcher.handle(t, o));
  await settled(nodes.length);
  const listed = callsSince(before);
  process.stdout.write(
    `node list: ${loop.stats.events} events; quorum reads ${quorumReads.mock.calls.length}; ` +
      `gRPC calls ${JSON.stringify(listed)}\n`,
  );
  expect(errors).toEqual([]);
  expect(listed.SignalWorkflowExecution ?? 0).toBe(0);
  expect(listed.ListWorkflowExecutions ?? 0).toBe(0);
  expect(quorumReads.mock.calls.length).toBe(0);
  expect(outcomes.filter((o) => o === 'settled').length).toBeGreaterThanOrEqual(nodes.length);

  // The first Node deleted and registered again: a new incarnation, which its workflow is told.
  const [replaced] = nodes as [string];
  await cluster.deleteNode(replaced);
  const newUid = await cluster.createNode(replaced);
  const state = await waitForValue(
    () => quiet.nodeState(replaced),
    (s) => s.incarnation === newUid,
    30_000,
    200,
    `node ${replaced} observing ${newUid}`,
  );
  expect(state.past).toEqual([uids[0]]);
  expect(quorumReads.mock.calls.length).toBeGreaterThanOrEqual(1);
  expect(outcomes).toContain('told');
  expect(errors).toEqual([]);
}, 120_000);

test('a lease on an interface the watcher does not read is released by the sweep, which counts it', async () => {
  const { cluster } = watching;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('two-nets', node);
  await watching.add('two-nets', uid, node, 'ctr-two-nets');
  await watching.add('two-nets', uid, node, 'ctr-two-nets', 'net1'); // a secondary network's ADD
  await cluster.deletePod('two-nets');
  // The control worker's watch reads eth0's lease by id (kubernetes.podInterfaces: eth0)...
  const eth0 = await watching.waitForPhase(uid, 'Released');
  expect(eth0.releaseReason).toMatch(/^watcher: .* no longer exists/);
  expect((await watching.leaseState(uid, 'net1')).phase).toBe('Active');
  // ...and the sweep, which lists every open lease, releases net1's and says why it had to.
  await watching.listed(uid);
  const summary = await watching.reconcile();
  expect(summary.leasesUnwatched).toBe(1);
  expect(summary.released).toBe(1);
  const net1 = await watching.waitForPhase(uid, 'Released', 30_000, 'net1');
  expect(net1.releaseReason).toMatch(/^reconciler: .* no longer exists/);
}, 120_000);

test('the terminal status and the deletion handled back to back: one quorum read, one release', async () => {
  const { cluster } = quiet;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('back-to-back', node);
  await quiet.add('back-to-back', uid, node);
  await cluster.setPodPhase('back-to-back', 'Failed');
  const failed = await cluster.clients.core.readNamespacedPod({
    name: 'back-to-back',
    namespace: cluster.namespace,
  });
  await cluster.deletePod('back-to-back');
  const reader = new ClusterReader(cluster.clients.core, cluster.clients.timeouts);
  const quorumReads = jest.spyOn(reader, 'readPod');
  const pods = new PodEvents(reader, quiet.temporal.client, quiet.temporal.taskQueue);
  expect(await pods.handle('MODIFIED', failed)).toBe('released');
  // At once, before the lease's workflow task shows Releasing (or after: the same either way).
  expect(await pods.handle('DELETED', failed)).toBe('settled');
  expect(quorumReads.mock.calls.length).toBe(1);
  await quiet.waitForPhase(uid, 'Released');
  expect(await signalsTo(quiet, uid)).toEqual({ release: 1 });
}, 120_000);

test('with both interfaces in podInterfaces the watcher releases both leases on the deletion', async () => {
  const { cluster } = quiet;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('both-nets', node);
  await quiet.add('both-nets', uid, node, 'ctr-both-nets');
  await quiet.add('both-nets', uid, node, 'ctr-both-nets', 'net1');
  const pod = await cluster.clients.core.readNamespacedPod({
    name: 'both-nets',
    namespace: cluster.namespace,
  });
  await cluster.deletePod('both-nets');
  const reader = new ClusterReader(cluster.clients.core, cluster.clients.timeouts);
  const pods = new PodEvents(reader, quiet.temporal.client, quiet.temporal.taskQueue, ['eth0', 'net1']);
  expect(await pods.handle('DELETED', pod)).toBe('released');
  for (const ifName of ['eth0', 'net1'])
    expect((await quiet.waitForPhase(uid, 'Released', 30_000, ifName)).releaseReason).toMatch(/^watcher: /);
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(quiet.temporal, 8);
  await expectReplayed(watching.temporal, 2);
});
