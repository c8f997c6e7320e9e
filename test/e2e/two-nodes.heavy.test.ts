// Two real nodes (two containerds, two kubelets, two node agents) share one pool, driven through
// the Kubernetes API only. A Deployment spread over both runs with its leases' addresses, unique
// across the nodes, and pods on different nodes reach each other (tools/node-fabric routes the
// pool between the nodes' host namespaces). Then one node is replaced under the same name with
// pods on it, as in seeds 000/004, while the other keeps serving: its pods move to the other node
// and get fresh leases there, the old ones are compensated, and once the node is back the
// Deployment grows onto it; at no point is an address held twice across the two nodes. The
// machine reaches the pods (tools/node-reach): a Deployment with probes is Ready, and the machine's
// routing decision for a pod address leads into its node's host namespace, for an address no node
// holds nowhere (read from the routing table: a packet would leave the machine without the fix).
import { expectReplayed } from '../harness/replay';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { addressOwnershipFindings } from '../../domain/address-ownership';
import { formatAddress, lastAddress, parsePrefix } from '../../domain/cidr';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { ipJson, IpError } from '../../kernel/ip';
import { LinkSchema, RouteEntrySchema } from '../../kernel/links';
import { HOST_LINK, machineLinkOf } from '../../tools/node-reach';
import { nodeStateQuery, type NodeState } from '../../workflows/node-messages';
import { hostEnds, ping } from '../harness/netns';
import { sandboxNetns } from '../harness/real-node';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import {
  leaseOfPod,
  probedDeployment,
  scaleDeployment,
  sleepersDeployment,
  spreadOverNodes,
  useRealCluster,
  type RealClusterNode,
} from '../harness/real-cluster';

const REPLICAS = 8;
const GROWN = 12;
const nodeNames: [string, string] = [uniqueName('two-a'), uniqueName('two-b')];
const namespace = 'default';
const app = uniqueName('spread');
const probed = uniqueName('probed');
const real = useRealCluster(
  { prefix: 'two', nodeNames, preProduce: true },
  { startMs: 400_000, stopMs: 240_000 },
);

const nodeOf = (name: string | undefined): RealClusterNode => {
  const found = real.nodes.find((n) => n.real.nodeName === name);
  if (!found) throw new Error(`no real node ${name}`);
  return found;
};

const nodeState = (name: string): Promise<NodeState> =>
  real.temporal.client.workflow.getHandle(nodeWorkflowId(name)).query(nodeStateQuery);

const nodeUid = async (name: string): Promise<string> => {
  try {
    return (await real.core.readNode({ name })).metadata?.uid ?? '';
  } catch {
    return '';
  }
};

const podsLabelled = async (label: string): Promise<V1Pod[]> =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${label}` })).items;
const podsOfApp = () => podsLabelled(app);

const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** `count` pods of the app Running (none of `old`), with each one's lease Running. */
async function runningPods(
  count: number,
  old: string[] = [],
): Promise<{ pods: V1Pod[]; leases: Map<string, LeaseState> }> {
  const pods = await waitForValue(
    podsOfApp,
    (ps) =>
      ps.length === count &&
      ps.every(
        (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && !old.includes(uidOf(p)),
      ),
    300_000,
    1000,
    `${count} pods of ${app} Running`,
  );
  const leases = new Map<string, LeaseState>();
  for (const pod of pods) {
    const lease = await waitForValue(
      () => leaseOfPod(real.temporal, uidOf(pod)),
      (s) => s?.phase === 'Running',
      60_000,
    );
    if (lease) leases.set(uidOf(pod), lease);
  }
  return { pods, leases };
}

/**
 * Each pod's lease was made for the pod's node and its podIPs are the lease's addresses; no
 * address is held twice across the nodes, and each node's table holds exactly its pods' addresses.
 */
async function expectAddressedOnce(pods: V1Pod[], leases: Map<string, LeaseState>): Promise<void> {
  for (const pod of pods) {
    const lease = leases.get(uidOf(pod));
    expect(lease?.start.nodeName).toBe(pod.spec?.nodeName);
    expect(addressesOf(lease)).toHaveLength(2); // the test pool is dual-stack
    expect(sorted((pod.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addressesOf(lease)));
  }
  const states = await Promise.all(nodeNames.map(async (node) => ({ node, ...(await nodeState(node)) })));
  expect(addressOwnershipFindings(states).map((f) => f.message)).toEqual([]);
  for (const state of states) {
    const owners = Object.fromEntries(
      Object.values(state.tables[real.temporal.taskQueue]?.allocations ?? {}).map((a) => [
        a.address,
        a.owner,
      ]),
    );
    const expected = Object.fromEntries(
      pods
        .filter((p) => p.spec?.nodeName === state.node)
        .flatMap((p) => addressesOf(leases.get(uidOf(p))).map((a) => [a, leaseWorkflowId(uidOf(p), 'eth0')])),
    );
    expect({ node: state.node, owners }).toEqual({ node: state.node, owners: expected });
  }
}

/** eth0 in the pod's sandbox namespace, on its own node's containerd, carries its lease's addresses. */
async function podNetns(pod: V1Pod, lease: LeaseState | undefined): Promise<string> {
  const { netns } = await sandboxNetns(nodeOf(pod.spec?.nodeName).real.containerd.ctr, uidOf(pod));
  const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  const onLink = (eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local);
  expect(sorted(onLink)).toEqual(sorted(addressesOf(lease)));
  return netns;
}

test('a Deployment spread over two real nodes: unique addresses, reachable across the nodes', async () => {
  await real.apps.createNamespacedDeployment({
    namespace,
    body: spreadOverNodes(sleepersDeployment(app, REPLICAS)),
  });
  const { pods, leases } = await runningPods(REPLICAS);
  for (const name of nodeNames)
    expect(pods.filter((p) => p.spec?.nodeName === name)).toHaveLength(REPLICAS / 2);
  await expectAddressedOnce(pods, leases);

  const netns = new Map<string, string>();
  for (const pod of pods) netns.set(uidOf(pod), await podNetns(pod, leases.get(uidOf(pod))));
  const [onA, onB] = nodeNames.map((name) => pods.find((p) => p.spec?.nodeName === name));
  if (!onA || !onB) throw new Error('a node has no pod');
  for (const [from, to] of [
    [onA, onB],
    [onB, onA],
  ] as const)
    for (const target of addressesOf(leases.get(uidOf(to)))) await ping(netns.get(uidOf(from)) ?? '', target);
}, 900_000);

const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

test('a Deployment with HTTP readiness and TCP liveness probes is Ready within seconds on both nodes', async () => {
  const replicas = 4;
  const started = Date.now();
  await real.apps.createNamespacedDeployment({
    namespace,
    body: spreadOverNodes(probedDeployment(probed, replicas)),
  });
  const pods = await waitForValue(
    () => podsLabelled(probed),
    (ps) => ps.length === replicas && ps.every(isReady),
    90_000,
    500,
    `${replicas} pods of ${probed} Ready`,
  );
  console.log(`e2e: ${replicas} pods with probes Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  expect(new Set(pods.map((p) => p.spec?.nodeName))).toEqual(new Set(nodeNames));
  // The liveness probe never failed: no container was restarted.
  expect(pods.map((p) => p.status?.containerStatuses?.[0]?.restartCount)).toEqual(pods.map(() => 0));

  // Gone again, their addresses returned, before the next test counts what each node holds.
  await scaleDeployment(real, probed, 0);
  await waitForValue(
    () => podsLabelled(probed),
    (left) => left.length === 0,
    120_000,
    1000,
    `pods of ${probed} gone`,
  );
  for (const pod of pods)
    await waitForValue(
      () => leaseOfPod(real.temporal, uidOf(pod)),
      (s) => s?.phase === 'Released',
      120_000,
    );
}, 300_000);

/** The machine's routing decision for `address` (`ip route get`: the kernel's lookup, no packet). */
async function machineRoute(address: string): Promise<{ dev?: string; unreachable?: string }> {
  try {
    const [route] = await ipJson(undefined, ['route', 'get', address], RouteEntrySchema);
    return { dev: route?.dev };
  } catch (err) {
    if (!(err instanceof IpError)) throw err;
    return { unreachable: err.stderr.replace(/^RTNETLINK answers: /, '').trim() };
  }
}

/** The ends of one veth pair: `link` in the machine's namespace, HOST_LINK in `hostNetns`. */
async function expectPaired(link: string, hostNetns: string): Promise<void> {
  const [machineEnd] = await ipJson(undefined, ['link', 'show', 'dev', link], LinkSchema);
  const [hostEnd] = await ipJson(hostNetns, ['link', 'show', 'dev', HOST_LINK], LinkSchema);
  expect({ machine: machineEnd?.link_index, host: hostEnd?.link_index }).toEqual({
    machine: hostEnd?.ifindex,
    host: machineEnd?.ifindex,
  });
}

type Decision = Awaited<ReturnType<typeof machineRoute>>;

test("the machine routes each pod's addresses into its node's host namespace, and no other pool address", async () => {
  const { pods, leases } = await runningPods(REPLICAS);
  // Every decision read, then compared at once: a failure shows each address's.
  const [decided, expected] = [{} as Record<string, Decision>, {} as Record<string, Decision>];
  for (const pod of pods)
    for (const address of addressesOf(leases.get(uidOf(pod)))) {
      decided[address] = await machineRoute(address);
      expected[address] = { dev: machineLinkOf(nodeOf(pod.spec?.nodeName).hostNetns) };
    }
  // An address of each pool CIDR that no node holds: unreachable, never the default route.
  const held = await waitForValue(
    async () =>
      (await Promise.all(nodeNames.map(nodeState))).flatMap((s) =>
        Object.keys(s.tables[real.temporal.taskQueue]?.allocations ?? {}),
      ),
    (addresses) => addresses.length === REPLICAS * 2, // the probed pods' returned
    60_000,
    500,
    `only the ${REPLICAS} pods' addresses held`,
  );
  for (const cidr of real.pool.cidrs) {
    const prefix = parsePrefix(cidr);
    const address = formatAddress(prefix.family, lastAddress(prefix) - 1n);
    expect(held).not.toContain(address);
    decided[address] = await machineRoute(address);
    expected[address] = { unreachable: 'No route to host' };
  }
  expect(Object.keys(decided)).toHaveLength(REPLICAS * 2 + real.pool.cidrs.length);
  expect(decided).toEqual(expected);
  // Each node's link is one end of a pair whose other end is in the node's host namespace.
  for (const node of real.nodes) await expectPaired(machineLinkOf(node.hostNetns), node.hostNetns);
});

test('a node replaced under the same name while the other serves: pods move, nothing held twice', async () => {
  const [nameA, nameB] = nodeNames;
  const before = await runningPods(REPLICAS);
  const oldOnA = before.pods.filter((p) => p.spec?.nodeName === nameA).map(uidOf);
  const oldNode = await nodeUid(nameA);
  expect(oldOnA).toHaveLength(REPLICAS / 2);

  const a = nodeOf(nameA);
  await a.goDown();
  await real.core.deleteNode({ name: nameA });

  // The pod GC deletes A's pods (after its quarantine) and the ReplicaSet's replacements run on B
  // (the only node), each with a lease of B. Release follows the pod: A's leases end as their
  // pods go (the watcher, or the compensation of A's incarnation), and then the compensation ends.
  const retired = await waitForValue(
    () => nodeState(nameA),
    (s) => s.incarnation === '' && s.past.includes(oldNode) && s.retired[oldNode] === undefined,
    240_000,
    500,
    `incarnation ${oldNode} of ${nameA} compensated`,
  );
  expect(retired.tables[real.temporal.taskQueue]?.allocations ?? {}).toEqual({});
  // By the watcher (the pod GC marks the pod Failed, then deletes it) or by the compensation,
  // as in node-replaced: with netlease as pods the watcher may see the deletions first.
  for (const uid of oldOnA)
    expect(
      (
        await waitForValue(
          () => leaseOfPod(real.temporal, uid),
          (s) => s?.phase === 'Released',
          60_000,
        )
      )?.releaseReason,
    ).toMatch(new RegExp(`is Failed|no longer exists|incarnation ${oldNode}`));
  const moved = await runningPods(REPLICAS, oldOnA);
  expect(moved.pods.map((p) => p.spec?.nodeName)).toEqual(moved.pods.map(() => nameB));
  await expectAddressedOnce(moved.pods, moved.leases);

  // A comes back under the same name (a new UID); the Deployment grows onto it.
  await a.comeBack();
  await waitForValue(
    () => nodeUid(nameA),
    (uid) => uid !== '' && uid !== oldNode,
    120_000,
    500,
    `${nameA} back`,
  );
  await scaleDeployment(real, app, GROWN);
  const grown = await runningPods(GROWN, oldOnA);
  expect(grown.pods.filter((p) => p.spec?.nodeName === nameA)).toHaveLength(GROWN - REPLICAS);
  await expectAddressedOnce(grown.pods, grown.leases);
  for (const pod of grown.pods) await podNetns(pod, grown.leases.get(uidOf(pod)));
  // The kubelet tore down A's old sandboxes: A's host namespace has a host end per pod on A only.
  await waitForValue(
    async () => hostEnds(await ipJson(a.hostNetns, ['addr', 'show'], LinkSchema)).length,
    (n) => n === GROWN - REPLICAS,
    180_000,
    1000,
    `host ends of ${nameA}'s old pods removed`,
  );

  // Scale to 0: every lease Released and both nodes' tables empty.
  await scaleDeployment(real, app, 0);
  await waitForValue(podsOfApp, (left) => left.length === 0, 300_000, 1000, `pods of ${app} gone`);
  for (const uid of [...grown.leases.keys()])
    await waitForValue(
      () => leaseOfPod(real.temporal, uid),
      (s) => s?.phase === 'Released',
      120_000,
    );
  for (const name of nodeNames)
    await waitForValue(
      () => nodeState(name),
      (s) => Object.keys(s.tables[real.temporal.taskQueue]?.allocations ?? {}).length === 0,
      60_000,
      500,
      `no allocation left on ${name}`,
    );
}, 1_500_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, GROWN + REPLICAS / 2 + 2); // every pod's lease and the two nodes'
});
