// Seed 001 (whereabouts): the reconciler must never release the lease of a pod that exists,
// even Pending with no IP in its status; once the pod is gone, it releases it.
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('s001', { watch: false })));
afterAll(async () => scenario?.close());

test('001 reconciler vs a Pending pod', async () => {
  const { cluster } = scenario;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('web-2', node);
  const addresses = await scenario.add('web-2', uid, node);
  expect(addresses).toHaveLength(2);
  await scenario.listed(uid);

  for (let run = 0; run < 5; run++) {
    const summary = await scenario.reconcile();
    expect(summary.leases).toBeGreaterThanOrEqual(1);
    expect(summary.released).toBe(0);
    const state = await scenario.leaseState(uid);
    expect(state.phase).toBe('Active');
    expect(state.addresses).toEqual(addresses);
  }

  await cluster.deletePod('web-2');
  const summary = await scenario.reconcile();
  expect(summary.released).toBe(1);
  const state = await scenario.waitForPhase(uid, 'Released');
  expect(state.releaseReason).toMatch(/reconciler: pod .*web-2 .* no longer exists/);
}, 180_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 3);
});
