// Seed 000 (Azure CNS): a node replaced under the same name must not inherit stale state.
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

async function shimAdd(podName: string, podUid: string, node: string): Promise<string[]> {
  const outcome = await runShim({
    command: 'ADD',
    containerId: `ctr-${podUid}`,
    netns: `/var/run/netns/${podUid}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: scenario.cluster.namespace, K8S_POD_NAME: podName, K8S_POD_UID: podUid },
    stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
  });
  expect(outcome.stdout).toMatch(/"ips"/);
  return (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0] as string);
}

test('000 node replaced: the new incarnation never gets an address a live old lease holds', async () => {
  const { cluster } = scenario;
  const node = uniqueName('n1');
  const oldUid = await cluster.createNode(node);
  const oldPods = await Promise.all(
    ['a', 'b', 'c'].map(async (p) => ({ name: p, uid: await cluster.createPod(p, node) })),
  );
  const oldAddresses = new Map<string, string[]>(); // pod uid → addresses
  for (const pod of oldPods) oldAddresses.set(pod.uid, await shimAdd(pod.name, pod.uid, node));

  // Replace the node: same name, new UID, while the old leases still exist.
  await cluster.deleteNode(node);
  const newUid = await cluster.createNode(node);
  expect(newUid).not.toBe(oldUid);

  const newPods = await Promise.all(
    ['d', 'e'].map(async (p) => ({ name: p, uid: await cluster.createPod(p, node) })),
  );
  // The new incarnation allocates from blocks of its own: the old incarnation's blocks go back to
  // the pool only after all of its leases are released, so no old address comes back here.
  const everyOldAddress = [...oldAddresses.values()].flat();
  for (const pod of newPods) {
    const addresses = await shimAdd(pod.name, pod.uid, node);
    expect(addresses).toHaveLength(2);
    expect(addresses.filter((a) => everyOldAddress.includes(a))).toEqual([]);
  }

  for (const pod of oldPods) {
    const state = await scenario.waitForPhase(pod.uid, 'Released');
    expect(state.releaseReason).toContain(`incarnation ${oldUid}`);
  }
  for (const pod of newPods) expect((await scenario.leaseState(pod.uid)).phase).toBe('Active');

  const nodeState = await waitForValue(
    () => scenario.nodeState(node),
    (s) => Object.keys(s.retired).length === 0,
    30000,
  );
  expect(nodeState.incarnation).toBe(newUid);
  const table = nodeState.tables[scenario.temporal.taskQueue];
  expect(Object.values(table?.allocations ?? {}).every((a) => a.incarnation === newUid)).toBe(true);
  expect((table?.blocks ?? []).every((b) => b.incarnation === newUid)).toBe(true);
  const pool = await scenario.temporal.client.workflow
    .getHandle(poolWorkflowId(scenario.temporal.taskQueue))
    .query(poolStateQuery);
  expect(Object.values(pool.blocks).filter((o) => o.node === node && o.incarnation === oldUid)).toEqual([]);

  // Loading an address another owner holds fails loudly and changes nothing.
  const owned = Object.values(table?.allocations ?? {})[0];
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

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 3);
});
