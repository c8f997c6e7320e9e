// One allocation or release sent straight to a node workflow as a batch of one (the node's
// update for both), for tests that drive the node without the control worker's queue. A refused
// operation is thrown as the ApplicationFailure the lease would get.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { AddressGrant } from '../../domain/allocation';
import { FailureType } from '../../domain/lease';
import { allocateUpdateId, nodeBatchUpdateId, nodeWorkflowId, releaseUpdateId } from '../../domain/ids';
import {
  batchUpdate,
  NODE_WORKFLOW_TYPE,
  type AllocateRequest,
  type NodeOperation,
  type OperationOutcome,
  type ReleaseAddressRequest,
} from '../../workflows/node-messages';

export interface NodeTarget {
  client: Client;
  taskQueue: string;
  nodeName: string;
  historyLimit: number;
}

function answerOf(outcomes: OperationOutcome[]): AddressGrant[] {
  const [outcome] = outcomes;
  if (!outcome) throw new Error('the node answered a batch of one with no outcome');
  if ('failure' in outcome) throw ApplicationFailure.create(outcome.failure);
  return outcome.grants;
}

/** Sends the batch again while the node says so (it rebuilds its table first), as the control worker does. */
async function answered(send: () => Promise<OperationOutcome[]>): Promise<AddressGrant[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const outcomes = await send();
    const failure = outcomes[0] && 'failure' in outcomes[0] ? outcomes[0].failure : undefined;
    if (failure?.type !== FailureType.tableRebuilding || Date.now() > deadline) return answerOf(outcomes);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function nodeOperations({ client, taskQueue, nodeName, historyLimit }: NodeTarget) {
  const workflowId = nodeWorkflowId(nodeName);
  const options = (op: NodeOperation) => ({
    args: [[op]] as [NodeOperation[]],
    updateId: nodeBatchUpdateId(nodeName, randomUUID()),
  });
  return {
    /** Starts the node workflow if it is not running, as the control worker does. */
    allocate: async (request: AllocateRequest): Promise<AddressGrant[]> =>
      answered(() =>
        client.workflow.executeUpdateWithStart(batchUpdate, {
          ...options({ kind: 'allocate', id: allocateUpdateId(request.owner, request.run ?? ''), request }),
          startWorkflowOperation: new WithStartWorkflowOperation(NODE_WORKFLOW_TYPE, {
            workflowId,
            taskQueue,
            args: [{ nodeName, historyLimit }],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        }),
      ),
    release: async (request: ReleaseAddressRequest): Promise<AddressGrant[]> =>
      answered(() =>
        client.workflow
          .getHandle(workflowId)
          .executeUpdate(
            batchUpdate,
            options({ kind: 'release', id: releaseUpdateId(request.owner, request.run ?? ''), request }),
          ),
      ),
  };
}
