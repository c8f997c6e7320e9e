// Seed 000 (Azure CNS): a node replaced under the same name must not inherit stale state, and
// must not take the addresses of the pods that still run on it either. Release follows the pod:
// the old incarnation's leases of pods still in the API are adopted by the new incarnation with
// their addresses (the kubelet that comes back re-runs them with the same pod UID); the leases
// of pods that are gone end.
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { loadAllocationUpdate } from '../../workflows/node-messages';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import { poolStateQuery } from '../../workflows/pool-messages';
import type { PoolSpec } from '../../domain/config';

let scenario: Scenario;
// No watcher: compensation starts only when the new incarnation's first ADD observes its UID, so
// the old leases are certainly live while the new incarnation allocates.
beforeAll(async () => (scenario = await Scenario.create('s000', { watch: false })));
afterAll(async () => scenario?.close());

async function shimAdd(podName: string, podUid: string, node: string, sandbox = podUid): Promise<string[]> {
  const outcome = await runShim({
    command: 'ADD',
    containerId: `ctr-${sandbox}`,
    netns: `/var/run/netns/${sandbox}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: scenario.cluster.namespace, K8S_POD_NAME: podName, K8S_POD_UID: podUid },
    stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
  });
  expect(outcome.stdout).toMatch(/"ips"/);
  return (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0] as string);
}

test('000 node replaced: living pods keep their addresses, gone pods release theirs, nothing is held twice', async () => {
  const { cluster } = scenario;
  const node = uniqueName('n1');
  const oldUid = await cluster.createNode(node);
  const oldPods = await Promise.all(
    ['a', 'b', 'c'].map(async (p) => ({ name: p, uid: await cluster.createPod(p, node) })),
  );
  const oldAddresses = new Map<string, string[]>(); // pod uid → addresses
  for (const pod of oldPods) oldAddresses.set(pod.uid, await shimAdd(pod.name, pod.uid, node));
  const [a, b, c] = oldPods as [(typeof oldPods)[0], (typeof oldPods)[0], (typeof oldPods)[0]];

  // The Node object is deleted and registered again under the same name while a and b run; c is
  // deleted meanwhile (the pod GC, or its owner).
  await cluster.deleteNode(node);
  await cluster.deletePod(c.name);
  const newUid = await cluster.createNode(node);
  expect(newUid).not.toBe(oldUid);

  // New pods on the new incarnation: none gets an address a living pod holds.
  const newPods = await Promise.all(
    ['d', 'e'].map(async (p) => ({ name: p, uid: await cluster.createPod(p, node) })),
  );
  const living = [...(oldAddresses.get(a.uid) ?? []), ...(oldAddresses.get(b.uid) ?? [])];
  const newAddresses: string[] = [];
  for (const pod of newPods) {
    const addresses = await shimAdd(pod.name, pod.uid, node);
    expect(addresses).toHaveLength(2);
    expect(addresses.filter((x) => living.includes(x))).toEqual([]);
    newAddresses.push(...addresses);
  }

  // c's pod is gone: its lease ends. a and b keep theirs, with the same addresses.
  const released = await scenario.waitForPhase(c.uid, 'Released');
  expect(released.releaseReason).toContain(`incarnation ${oldUid}`);
  expect(released.releaseReason).toContain('no longer exists');
  const nodeState = await waitForValue(
    () => scenario.nodeState(node),
    (s) => Object.keys(s.retired).length === 0,
    30000,
  );
  for (const pod of [a, b]) {
    const state = await scenario.leaseState(pod.uid);
    expect(state.phase).toBe('Active');
    expect(state.addresses.map((x) => x.address)).toEqual(oldAddresses.get(pod.uid));
  }

  // The kubelet that comes back re-runs a (same pod UID, a new sandbox): the same addresses.
  expect(await shimAdd(a.name, a.uid, node, `${a.uid}-again`)).toEqual(oldAddresses.get(a.uid));

  // The new incarnation holds every allocation, the adopted ones included, and the blocks that
  // hold them (the pool was told); nothing is left of the old incarnation anywhere.
  expect(nodeState.incarnation).toBe(newUid);
  const table = nodeState.tables[scenario.temporal.taskQueue];
  const allocations = Object.values(table?.allocations ?? {});
  expect(allocations.every((x) => x.incarnation === newUid)).toBe(true);
  expect(allocations.map((x) => x.address).sort()).toEqual([...living, ...newAddresses].sort());
  expect((table?.blocks ?? []).every((x) => x.incarnation === newUid)).toBe(true);
  const pool = await scenario.temporal.client.workflow
    .getHandle(poolWorkflowId(scenario.temporal.taskQueue))
    .query(poolStateQuery);
  const ofNode = Object.values(pool.blocks).filter((o) => o.node === node);
  expect(ofNode.length).toBeGreaterThan(0);
  expect(ofNode.filter((o) => o.incarnation === oldUid)).toEqual([]);

  // Loading an address another owner holds fails loudly and changes nothing.
  const owned = allocations[0];
  if (!owned) throw new Error('the new incarnation holds no allocation');
  const before = JSON.stringify(table);
  await expect(
    scenario.temporal.client.workflow.getHandle(nodeWorkflowId(node)).executeUpdate(loadAllocationUpdate, {
      args: [
        {
          pool: scenario.config.pools[0] as PoolSpec,
          allocation: { ...owned, owner: 'lease/stale/eth0' },
        },
      ],
    }),
  ).rejects.toThrow();
  expect(JSON.stringify(await scenario.table(node))).toBe(before);
}, 180_000);

test('000 node deleted and not back: living pods wait with their addresses; a pod gone then ends', async () => {
  const { cluster } = scenario;
  const node = uniqueName('n2');
  await cluster.createNode(node);
  const uid = await cluster.createPod('waits', node);
  const addresses = await shimAdd('waits', uid, node);
  const oldUid = (await scenario.nodeState(node)).incarnation;

  await cluster.deleteNode(node);
  await scenario.listed(uid);
  await scenario.reconcile(); // tells node/<name> its incarnation is gone
  await waitForValue(
    () => scenario.nodeState(node),
    (s) => s.incarnation === '' && s.retired[oldUid] !== undefined,
    30000,
  );
  const kept = await scenario.leaseState(uid);
  expect(kept.phase).toBe('Active');
  expect(kept.addresses.map((x) => x.address)).toEqual(addresses);

  // The pod GC removes it: compensation judges again and the lease ends.
  await cluster.deletePod('waits');
  const released = await scenario.waitForPhase(uid, 'Released', 90000);
  expect(released.releaseReason).toContain('no longer exists');
}, 180_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 6);
});
