// A node agent that reads the pods' facts (a kubernetes section) but has not opened its watches
// yet (it is starting) answers an ADD 11, naming that, and starts no lease: it never decides a pod's
// pool or static addresses without the pod's annotations (the soak: a static pod got the next free
// address from an agent just restarted). The real shim against the agent's CNI API.
import { WorkflowNotFoundError } from '@temporalio/client';
import { leaseWorkflowId } from '../../domain/ids';
import { netconf } from '../harness/netconf';
import { podCall, runShim } from '../harness/shim';
import { connectTest, serveTestCniApi, uniqueName, type TestTemporal } from '../harness/temporal';

let temporal: TestTemporal;
beforeAll(async () => {
  temporal = await connectTest('agent-starting');
});
afterAll(async () => temporal?.close());

test('an ADD while the agent starts is 11 pod-facts-unreadable, and no lease starts', async () => {
  const api = await serveTestCniApi(temporal.taskQueue, { factsComing: true });
  try {
    const pod = { namespace: 'shop', name: 'db-0', uid: uniqueName('uid') };
    const conf = netconf({ taskQueue: temporal.taskQueue, nodeName: 'n1' });
    const outcome = await runShim(podCall('ADD', pod, conf));
    expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 11 });
    expect(outcome.json?.msg).toBe(
      'pod-facts-unreadable: pool selection cannot read pod shop/db-0, its namespace or node n1 from the ' +
        'Kubernetes API: the node agent is starting: its watches of the pods are not open yet',
    );
    const describe = temporal.client.workflow.getHandle(leaseWorkflowId(pod.uid, 'eth0')).describe();
    await expect(describe).rejects.toBeInstanceOf(WorkflowNotFoundError);
  } finally {
    await api.close();
  }
});
