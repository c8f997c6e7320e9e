// "Changes no state": after a rejected call there is no running lease and no allocation for it.
import { WorkflowNotFoundError } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { nodeStateQuery } from '../../workflows/node-messages';
import type { TestTemporal } from './temporal';

export async function expectNoLease(
  temporal: TestTemporal,
  node: string,
  uid: string,
  ifName = 'eth0',
): Promise<void> {
  const handle = temporal.client.workflow.getHandle(leaseWorkflowId(uid, ifName));
  const status = await handle.describe().then(
    (d) => d.status.name,
    (err: unknown) => (err instanceof WorkflowNotFoundError ? 'absent' : Promise.reject(err)),
  );
  expect(['absent', 'FAILED']).toContain(status);
  const nodeState = await temporal.client.workflow
    .getHandle(nodeWorkflowId(node))
    .query(nodeStateQuery)
    .catch((err: unknown) => (err instanceof WorkflowNotFoundError ? undefined : Promise.reject(err)));
  const owners = Object.values(nodeState?.tables[temporal.taskQueue]?.allocations ?? {}).map((a) => a.owner);
  expect(owners).not.toContain(leaseWorkflowId(uid, ifName));
}
