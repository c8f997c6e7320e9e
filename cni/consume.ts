// The ADD call: update-with-start on the lease workflow. The shim uses it, and so do tests that
// drive many ADDs without paying a process start for each.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { addUpdateId } from '../domain/ids';
import type { ConsumeRequest, LeaseGrant, LeaseStart } from '../domain/lease';
import { leaseStartOptions } from '../temporal/leases';
import { consumeUpdate, LEASE_WORKFLOW_TYPE } from '../workflows/lease-messages';

export function consumeLease(
  client: Client,
  taskQueue: string,
  start: LeaseStart,
  request: ConsumeRequest,
): Promise<LeaseGrant> {
  return client.workflow.executeUpdateWithStart(consumeUpdate, {
    args: [request],
    updateId: addUpdateId(request.containerId, request.ifName, randomUUID()),
    // A lease the node agent pre-produced is running already: the ADD joins it.
    startWorkflowOperation: new WithStartWorkflowOperation(LEASE_WORKFLOW_TYPE, {
      ...leaseStartOptions(taskQueue, start),
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}
