// A watch that reopens (the server ended it, a connection gone silent or refused) goes on from the
// last resourceVersion it heard: a pod that did not change meanwhile costs nothing at all, not even
// an event; a pod that changed is handled. A deletion a relist (after 410 Gone) infers reaches
// PodEvents as the pod's identity only, and releases its lease the same way.
// The pod watcher as the control worker runs it (PodEvents on the watch loop), against the real
// kube-apiserver through a proxy the test cuts, and the real Temporal server.
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { connectKube } from '../../kubernetes/kube';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';
import { waitFor } from '../../tools/processes';
import { PodEvents } from '../../worker/control/watchers/pod-events';
import { countingClient } from '../harness/counting-client';
import { expectReplayed } from '../harness/replay';
import { apiServerAddress, kubeconfigThrough } from '../harness/kube';
import { Scenario } from '../harness/scenario';
import { tcpProxy, type TcpProxy } from '../harness/tcp-proxy';
import { uniqueName } from '../harness/temporal';

const PODS = 6;
let scenario: Scenario;
let proxy: TcpProxy;
let loop: WatchLoop | undefined;
beforeAll(async () => {
  scenario = await Scenario.create('relist', { watch: false }); // the test runs the watcher
  proxy = await tcpProxy(apiServerAddress());
});
afterAll(async () => {
  loop?.stop();
  await proxy?.close();
  await scenario?.close();
});

/** podRunning signals each lease received, from its history. */
async function podRunningSignals(uids: string[]): Promise<number> {
  let count = 0;
  for (const uid of uids) {
    const history = await scenario.lease(uid).fetchHistory();
    for (const event of history.events ?? [])
      if (event.workflowExecutionSignaledEventAttributes?.signalName === 'podRunning') count++;
  }
  return count;
}

test('a resumed watch costs nothing for pods already handled, and still handles a pod that changed', async () => {
  const { cluster } = scenario;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uids: string[] = [];
  for (let i = 0; i < PODS; i++) {
    const uid = await cluster.createPod(`pod-${i}`, node);
    await scenario.add(`pod-${i}`, uid, node);
    await cluster.setPodPhase(`pod-${i}`, 'Running');
    uids.push(uid);
  }
  const clients = await connectKube(kubeconfigThrough(proxy.address));
  const reader = new ClusterReader(clients.core, clients.timeouts);
  const quorumReads = jest.spyOn(reader, 'readPod'); // counts, and reads for real
  const { client, calls } = await countingClient();
  const pods = new PodEvents(reader, client, scenario.temporal.taskQueue);
  const errors: unknown[] = [];
  const path = `/api/v1/namespaces/${cluster.namespace}/pods`;
  loop = watchForever(
    clients,
    path,
    (t, o) => pods.handle(t, o),
    (e) => errors.push(e),
    { concurrency: 16 },
  );
  const watching = loop;

  // The first list: each pod is handled once, and its lease hears that it is Running.
  for (const uid of uids) await scenario.waitForPhase(uid, 'Running');
  expect(await waitFor(() => watching.pending === 0, 30_000)).toBe(true);
  expect(await podRunningSignals(uids)).toBe(PODS);
  const before = { reads: quorumReads.mock.calls.length, calls: new Map(calls), events: loop.stats.events };

  // The connection drops; while the watch is away one pod ends. The reopened watch resumes.
  proxy.refuse();
  await cluster.setPodPhase('pod-0', 'Failed');
  await proxy.restore();
  expect(await waitFor(() => watching.stats.events > before.events, 30_000)).toBe(true);
  expect(await waitFor(() => watching.pending === 0, 30_000)).toBe(true);
  expect((await scenario.waitForPhase(uids[0] as string, 'Released')).releaseReason).toBe(
    `watcher: pod ${cluster.namespace}/pod-0 is Failed`,
  );

  const since = (method: string) => (calls.get(method) ?? 0) - (before.calls.get(method) ?? 0);
  // Only the pod that changed cost a lease read (by id), a quorum read and a signal (its release);
  // no visibility listing at all.
  expect(quorumReads.mock.calls.length - before.reads).toBe(1);
  expect(since('DescribeWorkflowExecution')).toBe(1);
  expect(since('ListWorkflowExecutions')).toBe(0);
  expect(since('SignalWorkflowExecution')).toBe(1);
  // One event (pod-0's), no list again: the others were not even sent.
  expect(loop.stats).toMatchObject({ events: before.events + 1, unchanged: 0, listed: 1, vanished: 0 });
  expect(await podRunningSignals(uids)).toBe(PODS);

  // A deletion a relist infers carries the pod's identity only: the lease is released by it.
  const [, gone] = uids as [string, string];
  watching.stop(); // the watch itself must not hear this deletion first
  await cluster.deletePod('pod-1', 'now');
  const identity = { metadata: { uid: gone, namespace: cluster.namespace, name: 'pod-1' } };
  await expect(pods.handle('DELETED', identity)).resolves.toBe('released');
  expect((await scenario.waitForPhase(gone, 'Released')).releaseReason).toMatch(
    /^watcher: pod .*pod-1 .*no longer exists$/,
  );
  // Reported: only the dropped connection, no handling.
  const dropped = /Premature close|ECONNRESET|ECONNREFUSED|socket hang up/;
  expect(errors.map(String).filter((e) => !dropped.test(e))).toEqual([]);
  await client.connection.close();
}, 180_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, PODS);
});
