// An ADD whose nodeName names no Node (a typo in the CNI config) is a mistake in the request: a
// clear error 7 naming the field and the node, at once and every time, and no workflow left running.
import { WorkflowNotFoundError } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('unknown-node', { watch: false })));
afterAll(async () => scenario?.close());

const statusOf = (workflowId: string) =>
  scenario.temporal.client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      (d) => d.status.name,
      (err: unknown) => (err instanceof WorkflowNotFoundError ? 'absent' : Promise.reject(err)),
    );

test('ADD on a node that does not exist: error 7 naming nodeName, nothing left running', async () => {
  const ghost = uniqueName('no-such-node');
  const uid = await scenario.cluster.createPod('typo', uniqueName('elsewhere'));
  const add = () =>
    runShim({
      command: 'ADD',
      containerId: `ctr-${uid}`,
      netns: `/var/run/netns/${uid}`,
      ifName: 'eth0',
      args: { K8S_POD_NAMESPACE: scenario.cluster.namespace, K8S_POD_NAME: 'typo', K8S_POD_UID: uid },
      stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: ghost }),
    });
  // A runtime repeats an ADD that failed: the answer is the same each time.
  for (let call = 0; call < 2; call++) {
    const outcome = await add();
    expect(outcome.exitCode).toBe(1);
    expect(outcome.json?.code).toBe(7);
    expect(String(outcome.json?.msg)).toContain(`nodeName: node "${ghost}" does not exist`);
    expect(await statusOf(leaseWorkflowId(uid, 'eth0'))).toBe('COMPLETED');
  }
  expect(await statusOf(nodeWorkflowId(ghost))).toBe('absent');
  const state = await scenario.leaseState(uid);
  expect(state.phase).toBe('Released');
  expect(state.addresses).toEqual([]);
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 2);
});
