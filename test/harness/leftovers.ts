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
  expect(await leaseLeftovers(temporal, node, uid, ifName)).toEqual([]);
}

/** What a rejected call left of lease `lease/<uid>/<ifName>`: nothing, when the list is empty. */
export async function leaseLeftovers(
  temporal: Pick<TestTemporal, 'client' | 'taskQueue'>,
  node: string,
  uid: string,
  ifName = 'eth0',
): Promise<string[]> {
  const leaseId = leaseWorkflowId(uid, ifName);
  const handle = temporal.client.workflow.getHandle<typeof leaseWorkflow>(leaseId);
  const readStatus = () => unlessGone(async () => (await handle.describe()).status.name, 'absent');
  const status = await waitForValue(readStatus, (s) => s !== 'RUNNING', SETTLE_MS);
  const left: string[] = [];
  if (status !== 'absent' && status !== 'COMPLETED') left.push(`${leaseId} is ${status}`);
  if (status === 'COMPLETED') {
    const { phase, attachments } = await handle.result();
    if (phase !== 'Released' || attachments.length)
      left.push(`${leaseId} completed ${phase} with ${attachments.length} attachment(s)`);
  }
  const nodeState = await unlessGone(
    () => temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery),
    undefined,
  );
  const owners = Object.values(nodeState?.tables[temporal.taskQueue]?.allocations ?? {}).map((a) => a.owner);
  if (owners.includes(leaseId)) left.push(`${leaseId} holds an allocation on node ${node}`);
  return left;
}
