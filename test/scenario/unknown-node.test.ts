// An ADD whose nodeName names no Node now: a same-name replacement in progress (the kubelet
// registers the Node again), or a typo. Either way the answer is "try again later" (11) naming
// nodeName, nothing is left running, and once the Node exists the runtime's retry succeeds.
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { unlessGone } from '../../temporal/workflow-gone';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('unknown-node', { watch: false })));
afterAll(async () => scenario?.close());

const statusOf = (workflowId: string) =>
  unlessGone(
    async () => (await scenario.temporal.client.workflow.getHandle(workflowId).describe()).status.name,
    'absent',
  );

test('ADD while the Node is absent: 11 naming nodeName, nothing left running; the retry once it is back succeeds', async () => {
  const node = uniqueName('replaced');
  const uid = await scenario.cluster.createPod('web-0', node);
  const add = () =>
    runShim({
      command: 'ADD',
      containerId: `ctr-${uid}`,
      netns: `/var/run/netns/${uid}`,
      ifName: 'eth0',
      args: { K8S_POD_NAMESPACE: scenario.cluster.namespace, K8S_POD_NAME: 'web-0', K8S_POD_UID: uid },
      stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
    });
  // A runtime repeats an ADD that failed: the answer is the same each time.
  for (let call = 0; call < 2; call++) {
    const outcome = await add();
    expect(outcome.exitCode).toBe(1);
    expect(outcome.json?.code).toBe(11);
    expect(String(outcome.json?.msg)).toContain(`nodeName: node "${node}" does not exist in the cluster now`);
    expect(await statusOf(leaseWorkflowId(uid, 'eth0'))).toBe('COMPLETED');
  }
  expect(await statusOf(nodeWorkflowId(node))).toBe('absent');
  expect((await scenario.leaseState(uid)).addresses).toEqual([]);

  // The kubelet registers the Node again: the runtime's next retry gets addresses.
  await scenario.cluster.createNode(node);
  const retried = await add();
  expect(retried.exitCode).toBe(0);
  const ips = (retried.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0]);
  const state = await scenario.leaseState(uid);
  expect(state.phase).toBe('Active');
  expect(state.addresses.map((a) => a.address)).toEqual(ips);
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 3);
});
