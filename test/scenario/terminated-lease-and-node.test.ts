// A living pod's lease and its node's workflow terminated together from the UI or CLI (found by the
// soak's answer history: operator-terminate hit a pod's lease and its node): the node's new run
// rebuilt its table from the open leases only, so the closed lease's addresses were free and the
// next pod on the node was answered one of them while the first pod still ran; and with the table
// gone, the reconciler could not find the closed lease to start it again. A closed lease whose pod
// still exists keeps its addresses in the rebuilt table, and the reconciler starts it again.
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('term-both', { watch: false })));
afterAll(async () => scenario?.close());

const client = () => scenario.temporal.client;

test("a terminated lease of a living pod keeps its addresses when its node's workflow is terminated too", async () => {
  const node = uniqueName('both');
  await scenario.cluster.createNode(node);
  const held = new Map<string, string[]>();
  for (let i = 0; i < 2; i++) {
    const name = `both-${i}`;
    const uid = await scenario.cluster.createPod(name, node);
    held.set(
      uid,
      (await scenario.add(name, uid, node)).map((g) => g.address),
    );
  }
  const [victim] = [...held.keys()];
  if (!victim) throw new Error('no pod');
  await client().workflow.getHandle(leaseWorkflowId(victim, 'eth0')).terminate('pressed Terminate');
  await client().workflow.getHandle(nodeWorkflowId(node)).terminate('pressed Terminate');
  // The next pods on the node: none may be answered an address a living pod holds.
  const taken = [...held.values()].flat();
  for (let i = 0; i < 3; i++) {
    const name = uniqueName('next');
    const uid = await scenario.cluster.createPod(name, node);
    const addresses = (await scenario.add(name, uid, node)).map((g) => g.address);
    expect(addresses.filter((a) => taken.includes(a))).toEqual([]);
  }
  // The rebuilt table keeps the terminated lease's addresses for it, and the reconciler starts it again.
  const table = await scenario.table(node);
  for (const address of held.get(victim) ?? [])
    expect(table?.allocations[address]?.owner).toBe(leaseWorkflowId(victim, 'eth0'));
  const summary = await scenario.reconcile();
  expect(summary.leasesRecovered).toBe(1);
  const state = await waitForValue(
    () => scenario.leaseState(victim),
    (s) => s.addresses.length > 0,
    30_000,
  );
  expect(state.addresses.map((a) => a.address).sort()).toEqual([...(held.get(victim) ?? [])].sort());
  await expectReplayed(scenario.temporal, 4);
}, 180_000);
