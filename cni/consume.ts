// The ADD call: update-with-start on the lease workflow. The shim uses it, and so do tests that
// drive many ADDs without paying a process start for each.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { addUpdateId, leaseWorkflowId } from '../domain/ids';
import type { ConsumeRequest, LeaseGrant, LeaseStart } from '../domain/lease';
import { IfName, LeasePhase, NodeName, PodRef, PodUID } from '../domain/search-attributes';
import { consumeUpdate, LEASE_WORKFLOW_TYPE } from '../workflows/lease-messages';

export const podRef = (start: LeaseStart): string =>
  start.podName ? `${start.podNamespace}/${start.podName}` : start.podUid;

export function consumeLease(
  client: Client,
  taskQueue: string,
  start: LeaseStart,
  request: ConsumeRequest,
): Promise<LeaseGrant> {
  return client.workflow.executeUpdateWithStart(consumeUpdate, {
    args: [request],
    updateId: addUpdateId(request.containerId, request.ifName, randomUUID()),
    startWorkflowOperation: new WithStartWorkflowOperation(LEASE_WORKFLOW_TYPE, {
      workflowId: leaseWorkflowId(start.podUid, start.ifName),
      taskQueue,
      args: [start satisfies LeaseStart],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `${podRef(start)} ${start.ifName} on ${start.nodeName}`,
      typedSearchAttributes: [
        { key: PodUID, value: start.podUid },
        { key: PodRef, value: podRef(start) },
        { key: IfName, value: start.ifName },
        { key: NodeName, value: start.nodeName },
        { key: LeasePhase, value: 'Producing' },
      ],
    }),
  });
}
