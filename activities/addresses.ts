// Produce and return a lease's addresses through its node workflow (the node's single writer).
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { AddressGrant } from '../domain/allocation';
import type { ActivationPolicy } from '../domain/config';
import { allocateUpdateId, nodeWorkflowId, releaseUpdateId } from '../domain/ids';
import { NodeName } from '../domain/search-attributes';
import { allocateUpdate, nodeWorkflow, releaseUpdate } from '../workflows/node';
import { poolSpec, type ControlDeps } from './deps';
import { callUpdate } from './update-call';

export interface ProduceInput {
  leaseId: string;
  podUid: string;
  nodeName: string;
  pool: string;
}

export interface Produced {
  addresses: AddressGrant[];
  activation: ActivationPolicy;
}

export function addressActivities({ client, config, reader }: ControlDeps) {
  /** The node's UID by a quorum read; '' without a cluster. A missing node is retried. */
  const currentIncarnation = async (nodeName: string): Promise<string> => {
    if (!reader) return '';
    const uid = await reader.nodeUid(nodeName);
    if (uid === undefined)
      throw ApplicationFailure.retryable(`node ${nodeName} does not exist`, 'NodeUnknown');
    return uid;
  };

  const startNode = (nodeName: string) =>
    new WithStartWorkflowOperation(nodeWorkflow, {
      workflowId: nodeWorkflowId(nodeName),
      taskQueue: config.temporal.taskQueue,
      args: [{ nodeName, historyLimit: config.nodeHistoryLimit }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: NodeName, value: nodeName }],
    });

  return {
    async produceAddresses(input: ProduceInput): Promise<Produced> {
      const pool = poolSpec(config, input.pool);
      const incarnation = await currentIncarnation(input.nodeName);
      const addresses = await callUpdate(() =>
        client.workflow.executeUpdateWithStart(allocateUpdate, {
          args: [{ owner: input.leaseId, podUid: input.podUid, pool, incarnation }],
          updateId: allocateUpdateId(input.leaseId),
          startWorkflowOperation: startNode(input.nodeName),
        }),
      );
      return { addresses, activation: config.activation };
    },

    async returnAddresses(input: Omit<ProduceInput, 'podUid'>): Promise<AddressGrant[]> {
      const handle = client.workflow.getHandle(nodeWorkflowId(input.nodeName));
      try {
        return await callUpdate(() =>
          handle.executeUpdate(releaseUpdate, {
            args: [
              { owner: input.leaseId, pool: input.pool, cooldownMs: config.reuseCooldownSeconds * 1000 },
            ],
            updateId: releaseUpdateId(input.leaseId),
          }),
        );
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return []; // no node workflow: nothing was held
        throw err;
      }
    },
  };
}
