// Seeds 000 and 004 with the real node lifecycle: a node replaced under the same name. With a
// Deployment's pods running, the node's kubelet and agent stop and the Node is deleted; netlease
// retires that incarnation and releases its leases (compensation), the pod garbage collector
// deletes the orphaned pods, then the kubelet starts again under the same name (a new UID) and the
// Deployment's replacements run there. In Azure CNS (seed 000) the new node's state mixed with the
// old one's; in Cilium (seed 004) a deletion missed while the agent was down leaked node state.
// Here every old lease ends Released before the node comes back, and the new pods' addresses are
// their podIPs, each held once, by them alone. Only the Kubernetes API drives the workload.
import { expectReplayed } from '../harness/replay';
import type { AppsV1Api, V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { addressOwnershipFindings } from '../../domain/address-ownership';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { type CoreApi } from '../../kubernetes/kube';
import { stopPid } from '../../tools/processes';
import { nodeStateQuery, type NodeState } from '../../workflows/node-messages';
import { uniqueName, type TestTemporal } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import {
  leaseOfPod,
  sleepersDeployment,
  startRealCluster,
  onlyNode,
  type RealCluster,
  type RealClusterNode,
} from '../harness/real-cluster';

const REPLICAS = 3;
const nodeName = uniqueName('repl-node');
const namespace = 'default';
const app = uniqueName('replaced');
let temporal: TestTemporal;
let core: CoreApi;
let apps: AppsV1Api;

let real: RealCluster;
let node: RealClusterNode;
beforeAll(async () => {
  real = await startRealCluster({ prefix: 'replaced', nodeNames: [nodeName] });
  ({ temporal, core, apps } = real);
  node = onlyNode(real);
}, 300_000);
afterAll(() => real?.stop(), 180_000);

const leaseOf = (uid: string) => leaseOfPod(temporal, uid);

const nodeState = (): Promise<NodeState> =>
  temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery);

/** The Node's UID now, '' while there is none. */
const nodeUid = async (): Promise<string> => {
  try {
    return (await core.readNode({ name: nodeName })).metadata?.uid ?? '';
  } catch {
    return '';
  }
};

const podsOfApp = async (): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;

const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** Every pod of the app Running (none of `old`), with each one's lease Running. */
async function runningPods(old: string[] = []): Promise<{ pods: V1Pod[]; leases: Map<string, LeaseState> }> {
  const pods = await waitForValue(
    podsOfApp,
    (ps) =>
      ps.length === REPLICAS &&
      ps.every(
        (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && !old.includes(uidOf(p)),
      ),
    300_000,
    1000,
    `${REPLICAS} pods of ${app} Running`,
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
  const table = state.tables[temporal.taskQueue];
  const owners = Object.fromEntries(
    Object.values(table?.allocations ?? {}).map(({ address, owner }) => [address, owner]),
  );
  const expected = Object.fromEntries(
    [...leases].flatMap(([uid, lease]) => addressesOf(lease).map((a) => [a, leaseWorkflowId(uid, 'eth0')])),
  );
  expect(owners).toEqual(expected);
}

test('a node replaced under the same name: old leases compensated, new pods addressed once each', async () => {
  await apps.createNamespacedDeployment({
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
  if (node.agent) await stopPid(node.agent.pid);
  node.agent = undefined;
  await node.real.stopKubelet();
  await core.deleteNode({ name: nodeName });

  // netlease retires the incarnation: its leases are released and it is done compensating.
  const retired = await waitForValue(
    nodeState,
    (s) => s.incarnation === '' && s.past.includes(oldNode) && s.retired[oldNode] === undefined,
    120_000,
    500,
    `incarnation ${oldNode} of ${nodeName} compensated`,
  );
  for (const uid of oldUids) {
    const lease = await waitForValue(
      () => leaseOf(uid),
      (s) => s?.phase === 'Released',
      60_000,
    );
    expect(lease?.releaseReason).toContain(oldNode);
  }
  expect(retired.tables[temporal.taskQueue]?.allocations ?? {}).toEqual({});

  // The pod garbage collector deletes pods bound to a Node that is gone (after its 40 s quarantine).
  await waitForValue(
    podsOfApp,
    (ps) => !ps.some((p) => oldUids.includes(uidOf(p))),
    180_000,
    1000,
    `the pod GC deleting ${app}'s pods of the deleted node`,
  );

  // The node comes back under the same name: a new incarnation, where the replacements run. Every
  // old lease was Released above, so an old address a new pod gets was free when it got it.
  await node.real.startKubelet();
  await node.startAgent();
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
  await expectReplayed(temporal, 7); // six leases and the node's workflow at least
});
