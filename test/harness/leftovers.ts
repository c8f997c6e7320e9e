// "Changes no state": after a rejected call there is no lease, or one that completed without
// anything held (a produce failure ends the workflow normally, Released), and no allocation for it.
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { leaseWorkflow } from '../../workflows/lease';
import { unlessGone } from '../../temporal/workflow-gone';
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
  const readStatus = () => unlessGone(async () => (await handle.describe()).status.name, 'absent');
  const status = await waitForValue(readStatus, (s) => s !== 'RUNNING', SETTLE_MS);
  expect(['absent', 'COMPLETED']).toContain(status);
  if (status === 'COMPLETED') {
    const state = await handle.result();
    expect({ phase: state.phase, attachments: state.attachments }).toEqual({
      phase: 'Released',
      attachments: [],
    });
  }
  const nodeState = await unlessGone(
    () => temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery),
    undefined,
  );
  const owners = Object.values(nodeState?.tables[temporal.taskQueue]?.allocations ?? {}).map((a) => a.owner);
  expect(owners).not.toContain(leaseWorkflowId(uid, ifName));
}
