// Produce and return a lease's addresses through its node workflow (the node's single writer).
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { AddressGrant } from '../domain/allocation';
import type { ActivationPolicy } from '../domain/config';
import { allocateUpdateId, nodeWorkflowId, releaseUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName } from '../domain/search-attributes';
import {
  allocateUpdate,
  NODE_WORKFLOW_TYPE,
  releaseUpdate,
  type NodeInput,
} from '../workflows/node-messages';
import { poolSpec, type ControlDeps } from './deps';
import { callUpdate } from './update-call';

export interface ProduceInput {
  leaseId: string;
  /** The lease workflow's run id: scopes the allocation to this run of the lease. */
  run: string;
  podUid: string;
  nodeName: string;
  pool: string;
}

export interface Produced {
  addresses: AddressGrant[];
  activation: ActivationPolicy;
}

export function addressActivities({ client, config, reader }: ControlDeps) {
  /**
   * The node's UID by a quorum read; '' without a cluster. No Node of that name is a mistake in
   * the request (a typo in the CNI config's nodeName), never something to wait for: the kubelet
   * registers its Node before it runs a pod.
   */
  const currentIncarnation = async (nodeName: string): Promise<string> => {
    if (!reader) return '';
    const uid = await reader.nodeUid(nodeName);
    if (uid === undefined)
      throw ApplicationFailure.nonRetryable(
        `nodeName: node "${nodeName}" does not exist in the cluster`,
        FailureType.nodeUnknown,
      );
    return uid;
  };

  const startNode = (nodeName: string) =>
    new WithStartWorkflowOperation(NODE_WORKFLOW_TYPE, {
      workflowId: nodeWorkflowId(nodeName),
      taskQueue: config.temporal.taskQueue,
      args: [{ nodeName, historyLimit: config.nodeHistoryLimit } satisfies NodeInput],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: NodeName, value: nodeName }],
    });

  return {
    async produceAddresses(input: ProduceInput): Promise<Produced> {
      const pool = poolSpec(config, input.pool);
      const incarnation = await currentIncarnation(input.nodeName);
      const addresses = await callUpdate(() =>
        client.workflow.executeUpdateWithStart(allocateUpdate, {
          args: [{ owner: input.leaseId, podUid: input.podUid, pool, incarnation, run: input.run }],
          updateId: allocateUpdateId(input.leaseId, input.run),
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
              {
                owner: input.leaseId,
                pool: input.pool,
                cooldownMs: config.reuseCooldownSeconds * 1000,
                run: input.run,
              },
            ],
            updateId: releaseUpdateId(input.leaseId, input.run),
          }),
        );
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return []; // no node workflow: nothing was held
        throw err;
      }
    },
  };
}
