// Seed 004 (Cilium): deletions missed while the control worker was down are synthesized by the
// reconciler when it comes back; live leases are untouched. Release follows the pod: a pod still
// in the API on a Node that was deleted keeps its lease until the pod itself is gone.
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { runControlWorker, uniqueName } from '../harness/temporal';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('s004')));
afterAll(async () => scenario?.close());

test('004 missed node and pod deletions are reconciled after a restart', async () => {
  const { cluster } = scenario;
  const [gone, kept] = [uniqueName('gone'), uniqueName('kept')];
  await cluster.createNode(gone);
  await cluster.createNode(kept);
  const pods: Record<string, string> = {};
  for (const [name, node] of [
    ['a1', gone],
    ['a2', gone],
    ['b1', kept],
    ['b2', kept],
  ] as const) {
    pods[name] = await cluster.createPod(name, node);
    await scenario.add(name, pods[name] as string, node);
  }
  await cluster.setPodPhase('b1', 'Running');
  await scenario.waitForPhase(pods.b1 as string, 'Running');
  const b1Before = await scenario.leaseState(pods.b1 as string);

  await scenario.stopWorker();
  await cluster.deleteNode(gone);
  await cluster.deletePod('a1'); // the pod GC removed one of the deleted Node's pods, not yet a2
  await cluster.deletePod('b2');
  // Two control workers on the same task queue come back at once: both watch, both trigger the
  // reconciler; every signal is idempotent, so the outcome is the same as with one.
  const second = await runControlWorker(scenario.config);
  await scenario.startWorker(); // the reconcile schedule is triggered once at start

  for (const name of ['a1', 'b2']) await scenario.waitForPhase(pods[name] as string, 'Released', 90000);
  const b1 = await scenario.leaseState(pods.b1 as string);
  expect(b1.phase).toBe('Running');
  expect(b1.addresses).toEqual(b1Before.addresses);
  expect(b1.attachments).toEqual(b1Before.attachments);
  // a2's Node is gone but a2 is not: its lease is kept until the pod goes too.
  expect((await scenario.leaseState(pods.a2 as string)).phase).toBe('Active');
  await cluster.deletePod('a2');
  await scenario.waitForPhase(pods.a2 as string, 'Released', 90000);
  await second.stop();
}, 240_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 6);
});
