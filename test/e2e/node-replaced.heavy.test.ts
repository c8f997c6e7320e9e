// Seeds 000 and 004 with the real node lifecycle. First the Node object is deleted and registered
// again while its pods run (a kubelet restart inside the pod GC's 40-s quarantine): release
// follows the pod, so the pods keep their leases and addresses, adopted by the new incarnation.
// Then a node replaced under the same name: with a Deployment's pods running, the node's kubelet
// and agent stop and the Node is deleted; the pod garbage collector deletes the orphaned pods and
// netlease then releases their leases (compensation), then the kubelet starts again under the
// same name (a new UID) and the Deployment's replacements run there. In Azure CNS (seed 000) the
// new node's state mixed with the old one's; in Cilium (seed 004) a deletion missed while the
// agent was down leaked node state. Here no address is ever held twice, every old lease of a gone
// pod ends Released, and the pods' addresses are their podIPs. Only the Kubernetes API drives the
// workload.
import { expectReplayed } from '../harness/replay';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { addressOwnershipFindings } from '../../domain/address-ownership';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { stopPid } from '../../tools/processes';
import { nodeStateQuery, type NodeState } from '../../workflows/node-messages';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { leaseOfPod, sleepersDeployment, useRealCluster } from '../harness/real-cluster';

const REPLICAS = 3;
const nodeName = uniqueName('repl-node');
const namespace = 'default';
const app = uniqueName('replaced');
const real = useRealCluster({ prefix: 'replaced', nodeNames: [nodeName] });

const leaseOf = (uid: string) => leaseOfPod(real.temporal, uid);

const nodeState = (): Promise<NodeState> =>
  real.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery);

/** The Node's UID now, '' while there is none. */
const nodeUid = async (): Promise<string> => {
  try {
    return (await real.core.readNode({ name: nodeName })).metadata?.uid ?? '';
  } catch {
    return '';
  }
};

const podsOfApp = async (of = app): Promise<V1Pod[]> =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${of}` })).items;

const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** Every pod of the app Running (none of `old`), with each one's lease Running. */
async function runningPods(
  old: string[] = [],
  of = app,
): Promise<{ pods: V1Pod[]; leases: Map<string, LeaseState> }> {
  const pods = await waitForValue(
    () => podsOfApp(of),
    (ps) =>
      ps.length === REPLICAS &&
      ps.every(
        (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && !old.includes(uidOf(p)),
      ),
    300_000,
    1000,
    `${REPLICAS} pods of ${of} Running`,
  );
  const leases = new Map<string, LeaseState>();
  for (const pod of pods) {
    const lease = await waitForValue(
      () => leaseOf(uidOf(pod)),
      (s) => s?.phase === 'Running',
      60_000,
    );
    if (lease) leases.set(uidOf(pod), lease);
  }
  return { pods, leases };
}

/** Each pod's podIPs are its lease's addresses. */
function expectPodIpsAreLeases(pods: V1Pod[], leases: Map<string, LeaseState>): void {
  for (const pod of pods) {
    const addresses = addressesOf(leases.get(uidOf(pod)));
    expect(addresses).toHaveLength(2); // the test pool is dual-stack
    expect(sorted((pod.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));
  }
}

/** The node's table: no address held twice, and its owners exactly these leases' addresses. */
function expectTableHeldBy(state: NodeState, leases: Map<string, LeaseState>): void {
  expect(addressOwnershipFindings([{ node: nodeName, tables: state.tables }]).map((f) => f.message)).toEqual(
    [],
  );
  const table = state.tables[real.temporal.taskQueue];
  const owners = Object.fromEntries(
    Object.values(table?.allocations ?? {}).map(({ address, owner }) => [address, owner]),
  );
  const expected = Object.fromEntries(
    [...leases].flatMap(([uid, lease]) => addressesOf(lease).map((a) => [a, leaseWorkflowId(uid, 'eth0')])),
  );
  expect(owners).toEqual(expected);
}

test('the Node object deleted and registered again while its pods run: they keep their leases and addresses', async () => {
  const living = uniqueName('living');
  await real.apps.createNamespacedDeployment({ namespace, body: sleepersDeployment(living, REPLICAS) });
  const before = await runningPods([], living);
  const oldNode = await nodeUid();
  expectTableHeldBy(await waitForValue(nodeState, (s) => s.incarnation === oldNode, 60_000), before.leases);

  // The kubelet restarts inside the pod GC's quarantine, the Node object deleted meanwhile: it
  // registers the Node again (a new UID), and the pods, still bound to the name, run on.
  await real.node.real.stopKubelet();
  await real.core.deleteNode({ name: nodeName });
  await real.node.real.startKubelet();
  const newNode = await waitForValue(
    nodeUid,
    (uid) => uid !== '' && uid !== oldNode,
    120_000,
    500,
    'the Node again',
  );
  const adopted = await waitForValue(
    nodeState,
    (s) => s.incarnation === newNode && Object.keys(s.retired).length === 0,
    120_000,
    500,
    `incarnation ${oldNode} compensated, its living leases adopted`,
  );
  const after = await runningPods([], living);
  expect(after.pods.map(uidOf).sort()).toEqual(before.pods.map(uidOf).sort());
  for (const [uid, lease] of before.leases)
    expect(addressesOf(after.leases.get(uid))).toEqual(addressesOf(lease));
  expectPodIpsAreLeases(after.pods, after.leases);
  expectTableHeldBy(adopted, after.leases);
  const table = adopted.tables[real.temporal.taskQueue];
  expect(Object.values(table?.allocations ?? {}).every((a) => a.incarnation === newNode)).toBe(true);

  // Done with them: scaled away, every lease is released through the usual path.
  await real.apps.deleteNamespacedDeployment({ namespace, name: living });
  for (const uid of before.leases.keys())
    await waitForValue(
      () => leaseOf(uid),
      (s) => s?.phase === 'Released',
      120_000,
    );
}, 900_000);

test('a node replaced under the same name: old leases compensated once their pods are gone, new pods addressed once each', async () => {
  await real.apps.createNamespacedDeployment({
    namespace,
    body: sleepersDeployment(app, REPLICAS),
  });
  const before = await runningPods();
  const oldUids = before.pods.map(uidOf);
  const oldNode = await nodeUid();
  expect(oldNode).not.toBe('');
  expect(before.pods.map((p) => p.spec?.nodeName)).toEqual(oldUids.map(() => nodeName));
  expectPodIpsAreLeases(before.pods, before.leases);
  expectTableHeldBy(await waitForValue(nodeState, (s) => s.incarnation === oldNode, 60_000), before.leases);

  // The node goes down (its containers keep running, as a powered-off node's state is unknown),
  // and the Node is deleted.
  if (real.node.agent) await stopPid(real.node.agent.pid);
  real.node.agent = undefined;
  await real.node.real.stopKubelet();
  await real.core.deleteNode({ name: nodeName });

  // The pod garbage collector deletes pods bound to a Node that is gone (after its 40 s
  // quarantine). Release follows the pod: until then their leases are kept.
  await waitForValue(
    podsOfApp,
    (ps) => !ps.some((p) => oldUids.includes(uidOf(p))),
    180_000,
    1000,
    `the pod GC deleting ${app}'s pods of the deleted node`,
  );

  // netlease retires the incarnation: the leases of the gone pods are released and it is done.
  const retired = await waitForValue(
    nodeState,
    (s) => s.incarnation === '' && s.past.includes(oldNode) && s.retired[oldNode] === undefined,
    180_000,
    500,
    `incarnation ${oldNode} of ${nodeName} compensated`,
  );
  for (const uid of oldUids) {
    const lease = await waitForValue(
      () => leaseOf(uid),
      (s) => s?.phase === 'Released',
      60_000,
    );
    // By the watcher (the pod GC marks the pod Failed, then deletes it) or by the compensation.
    expect(lease?.releaseReason).toMatch(new RegExp(`is Failed|no longer exists|incarnation ${oldNode}`));
  }
  expect(retired.tables[real.temporal.taskQueue]?.allocations ?? {}).toEqual({});

  // The node comes back under the same name: a new incarnation, where the replacements run. Every
  // old lease was Released above, so an old address a new pod gets was free when it got it.
  await real.node.real.startKubelet();
  await real.node.startAgent();
  const newNode = await waitForValue(
    nodeUid,
    (uid) => uid !== '' && uid !== oldNode,
    120_000,
    500,
    'a new Node',
  );
  const after = await runningPods(oldUids);
  expectPodIpsAreLeases(after.pods, after.leases);
  const state = await waitForValue(nodeState, (s) => s.incarnation === newNode, 60_000);
  expect(state.past).toContain(oldNode);
  expectTableHeldBy(state, after.leases);
  for (const uid of oldUids) expect((await leaseOf(uid))?.phase).toBe('Released');
}, 1_200_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 8); // the leases of both tests and the node's workflow
});
