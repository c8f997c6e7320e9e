// "Changes no state": after a rejected call there is no lease, or one that completed without
// anything held (a produce failure ends the workflow normally, Released), and no allocation for it.
import { WorkflowNotFoundError } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { leaseWorkflow } from '../../workflows/lease';
import { nodeStateQuery } from '../../workflows/node-messages';
import type { TestTemporal } from './temporal';
import { waitForValue } from './wait';

/** A lease that failed its produce step completes within a few workflow tasks. */
const SETTLE_MS = 10_000;

export async function expectNoLease(
  temporal: TestTemporal,
  node: string,
  uid: string,
  ifName = 'eth0',
): Promise<void> {
  const handle = temporal.client.workflow.getHandle<typeof leaseWorkflow>(leaseWorkflowId(uid, ifName));
  const readStatus = () =>
    handle.describe().then(
      (d) => d.status.name,
      (err: unknown) => (err instanceof WorkflowNotFoundError ? 'absent' : Promise.reject(err)),
    );
  const status = await waitForValue(readStatus, (s) => s !== 'RUNNING', SETTLE_MS);
  expect(['absent', 'COMPLETED']).toContain(status);
  if (status === 'COMPLETED') {
    const state = await handle.result();
    expect({ phase: state.phase, attachments: state.attachments }).toEqual({
      phase: 'Released',
      attachments: [],
    });
  }
  const nodeState = await temporal.client.workflow
    .getHandle(nodeWorkflowId(node))
    .query(nodeStateQuery)
    .catch((err: unknown) => (err instanceof WorkflowNotFoundError ? undefined : Promise.reject(err)));
  const owners = Object.values(nodeState?.tables[temporal.taskQueue]?.allocations ?? {}).map((a) => a.owner);
  expect(owners).not.toContain(leaseWorkflowId(uid, ifName));
}
