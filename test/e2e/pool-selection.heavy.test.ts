// Pool selection across two real nodes (issue 29 item 3), driven through the Kubernetes API only:
// two pools whose node selectors name a region each, the two real Node objects labelled with one
// region each, and a namespace annotated with both pools. A pod pinned to each node gets its
// node's pool: read back from the pod's sandbox namespace on its node (the kernel), its podIPs
// and its lease. A pod annotated with the other node's pool never starts (calico#10502: never the
// wrong region's address): the kubelet's FailedCreatePodSandBox event carries the CNI refusal
// with its reason, `no-pool-for-pod`, and no lease of it is started.
import { contains, parseAddress, parsePrefix } from '../../domain/cidr';
import { ipJson } from '../../kernel/ip';
import { globalAddresses, LinkSchema } from '../../kernel/links';
import { sandboxNetns } from '../harness/real-node';
import { leaseOfPod, sleeperPod, useRealCluster, type RealClusterNode } from '../harness/real-cluster';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const REGION = 'topology.kubernetes.io/region';
const nodeNames: [string, string] = [uniqueName('sel-a'), uniqueName('sel-b')];
const REGIONS = [
  { region: 'eu', pool: uniqueName('eu'), cidr: '10.241.0.0/16', node: nodeNames[0] },
  { region: 'us', pool: uniqueName('us'), cidr: '10.242.0.0/16', node: nodeNames[1] },
] as const;
type Region = (typeof REGIONS)[number];
const namespace = uniqueName('selected');

const real = useRealCluster(
  {
    prefix: 'select',
    nodeNames,
    preProduce: true,
    morePools: REGIONS.map(({ region, pool, cidr }) => ({
      name: pool,
      cidrs: [cidr],
      nodeSelector: { matchLabels: { [REGION]: region } },
    })),
  },
  { startMs: 400_000, stopMs: 240_000 },
);

const nodeOf = (name: string): RealClusterNode => {
  const found = real.nodes.find((n) => n.real.nodeName === name);
  if (!found) throw new Error(`no real node ${name}`);
  return found;
};

/** Merges `patch` into an object, as `kubectl label`/`annotate` do. */
const mergePatch = () => {
  const { kube } = real.kube;
  return kube.setHeaderOptions('Content-Type', kube.PatchStrategy.MergePatch);
};

const labelNode = (name: string, region: string | null) =>
  real.core.patchNode({ name, body: { metadata: { labels: { [REGION]: region } } } }, mergePatch());

beforeAll(async () => {
  for (const { node, region } of REGIONS) await labelNode(node, region);
  const annotations = { 'netlease.io/pools': REGIONS.map((r) => r.pool).join(',') };
  await real.core.createNamespace({ body: { metadata: { name: namespace, annotations } } });
}, 60_000);

/** A busybox pod that sleeps, bound to `node` (no scheduler). */
async function createPod(name: string, node: string, annotations: Record<string, string> = {}) {
  const body = sleeperPod(name, node, annotations);
  return (await real.core.createNamespacedPod({ namespace, body })).metadata?.uid ?? '';
}

const readPod = (name: string) => real.core.readNamespacedPod({ namespace, name });
const inCidr = (cidr: string) => (address: string) => {
  const { family, value } = parseAddress(address.split('/')[0] ?? '');
  return contains(parsePrefix(cidr), family, value);
};
const sorted = (values: string[]) => [...values].sort();

const made: Array<{ name: string; uid: string }> = [];
/** The pods whose leases ran: each must be Released once its pod is deleted. */
const leased: Array<{ name: string; uid: string }> = [];

test.each(REGIONS)(
  "a pod on the $region node of a namespace naming both pools gets its node's pool: kernel, podIPs, lease",
  async (where: Region) => {
    const name = `web-${where.region}`;
    const uid = await createPod(name, where.node);
    made.push({ name, uid });
    const pod = await waitForValue(
      () => readPod(name),
      (p) => p.status?.phase === 'Running',
      180_000,
      1000,
      `pod ${name} Running`,
    );
    const lease = await waitForValue(
      () => leaseOfPod(real.temporal, uid),
      (s) => s?.phase === 'Running',
      60_000,
    );
    leased.push({ name, uid });
    expect(lease?.start.pool).toBe(where.pool);
    const addresses = (lease?.addresses ?? []).map((a) => a.address);
    expect(addresses).toHaveLength(1); // the region pools are IPv4 only
    expect(addresses.every(inCidr(where.cidr))).toBe(true);
    expect(sorted((pod.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));
    const { netns } = await sandboxNetns(nodeOf(where.node).real.containerd.ctr, uid);
    const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
    expect(sorted((eth0 ? globalAddresses(eth0) : []).map((a) => a.split('/')[0] ?? ''))).toEqual(
      sorted(addresses),
    );
  },
  300_000,
);

/** The messages of the pod's events of `reason`, as the kubelet wrote them. */
async function eventMessages(uid: string, reason: string): Promise<string[]> {
  const fieldSelector = `involvedObject.uid=${uid},reason=${reason}`;
  const events = await real.core.listNamespacedEvent({ namespace, fieldSelector });
  return events.items.map((e) => e.message ?? '');
}

test("calico#10502: a pod annotated with the other node's pool does not start, its event says why", async () => {
  const [eu, us] = REGIONS;
  const name = 'wrong-region';
  const uid = await createPod(name, eu.node, { 'netlease.io/pools': us.pool });
  made.push({ name, uid });
  const refusal =
    `no-pool-for-pod: pod ${namespace}/${name} on node ${eu.node}: its annotation netlease.io/pools ` +
    `names no pool for it: pool ${us.pool}: node ${eu.node} does not match its nodeSelector: ` +
    `${REGION}=us (has ${REGION}=eu)`;
  const messages = await waitForValue(
    () => eventMessages(uid, 'FailedCreatePodSandBox'),
    (ms) => ms.some((m) => m.includes(refusal)),
    180_000,
    1000,
    `a FailedCreatePodSandBox event of ${name} with the refusal`,
  );
  expect(messages.find((m) => m.includes(refusal))).toMatch(/failed to setup network for sandbox/);
  expect((await readPod(name)).status?.phase).toBe('Pending');
  expect(await leaseOfPod(real.temporal, uid)).toBeUndefined();
}, 300_000);

test('clean-up: the node labels removed, the pods and the namespace deleted, the leases released', async () => {
  for (const { node } of REGIONS) await labelNode(node, null);
  const labels = await Promise.all(
    REGIONS.map(async ({ node }) => (await real.core.readNode({ name: node })).metadata?.labels?.[REGION]),
  );
  expect(labels).toEqual([undefined, undefined]);
  expect(made.map((m) => m.name).sort()).toEqual(['web-eu', 'web-us', 'wrong-region']);
  await real.core.deleteNamespace({ name: namespace });
  await waitForValue(
    async () => (await real.core.listNamespacedPod({ namespace })).items.length,
    (n) => n === 0,
    180_000,
    1000,
    `pods of ${namespace} gone`,
  );
  expect(leased.map((l) => l.name).sort()).toEqual(['web-eu', 'web-us']);
  for (const { uid, name } of leased)
    await waitForValue(
      () => leaseOfPod(real.temporal, uid),
      (s) => s?.phase === 'Released',
      120_000,
      1000,
      `the lease of ${name} Released`,
    );
}, 300_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 2 + 2); // the two pods' leases and the two nodes'
});
