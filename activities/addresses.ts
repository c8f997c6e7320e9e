// Produce and return a lease's addresses through its node workflow (the node's single writer),
// in batches with the other leases of the node (node-batches.ts).
import { randomUUID } from 'node:crypto';
import { asyncLocalStorage } from '@temporalio/activity';
import { beating } from './beating';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { startAgain } from '../temporal/start-again';
import type { AddressGrant } from '../domain/allocation';
import type { ActivationPolicy } from '../domain/config';
import { allocateUpdateId, nodeBatchUpdateId, nodeWorkflowId, releaseUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName } from '../domain/search-attributes';
import { unlessGone } from '../temporal/workflow-gone';
import {
  batchUpdate,
  NODE_WORKFLOW_TYPE,
  rebuildUpdate,
  type NodeInput,
  type NodeOperation,
  type OperationOutcome,
} from '../workflows/node-messages';
import { poolSpec, type ControlDeps } from './deps';
import { NodeBatches, OperationFailed } from './node-batches';
import { SendAgain } from './update-batches';
import { RebuildRequests } from './rebuild-requests';
import { callUpdate } from './update-call';
import { nodeWorkflowRestarts } from '../observability/control-metrics';

/**
 * How long one batch may take: a hung call must not hold the node's queue. Its operations then
 * fail, their activities retry with backoff, and the node answers a repeat by operation id.
 */
const BATCH_DEADLINE_MS = 25_000;

export interface ProduceInput {
  leaseId: string;
  /** The lease workflow's run id: scopes the allocation to this run of the lease. */
  run: string;
  podUid: string;
  nodeName: string;
  pool: string;
  /** The pod's static addresses (domain/static-addresses). */
  addresses?: string[];
  /** The sticky reservation they are (domain/sticky-addresses). */
  reservation?: string;
}

export interface Produced {
  addresses: AddressGrant[];
  activation: ActivationPolicy;
}

export function addressActivities({ client, config, reader }: ControlDeps) {
  /**
   * The node's UID by a quorum read; '' without a cluster. No Node of that name fails this lease
   * run: the ADD gets "try again later" (a same-name replacement: the kubelet registers the Node
   * again, and its retry starts a new run), and the message names nodeName for a typo.
   */
  const currentIncarnation = async (nodeName: string): Promise<string> => {
    if (!reader) return '';
    const uid = await reader.nodeUid(nodeName);
    if (uid === undefined)
      throw ApplicationFailure.nonRetryable(
        `nodeName: node "${nodeName}" does not exist in the cluster now (being replaced under the same name, or a wrong nodeName)`,
        FailureType.nodeUnknown,
      );
    return uid;
  };

  const nodeStart = (nodeName: string, restartedAfter?: string) => ({
    taskQueue: config.temporal.taskQueue,
    args: [{ nodeName, historyLimit: config.nodeHistoryLimit, restartedAfter } satisfies NodeInput] as [
      NodeInput,
    ],
    typedSearchAttributes: [{ key: NodeName, value: nodeName }],
  });

  /** A closed node workflow is started again on purpose; the new run rebuilds its table first. */
  const restartNode = async (nodeName: string): Promise<void> => {
    const closed = await startAgain(client, nodeWorkflowId(nodeName), NODE_WORKFLOW_TYPE, (why) =>
      nodeStart(nodeName, why),
    );
    if (closed && closed !== 'RUNNING') nodeWorkflowRestarts.inc({ status: closed });
  };

  /** One batch to the node; a batch with an allocation starts a node workflow that never ran. */
  const sendBatch = async (nodeName: string, operations: NodeOperation[]): Promise<OperationOutcome[]> => {
    const options = {
      args: [operations] as [NodeOperation[]],
      updateId: nodeBatchUpdateId(nodeName, randomUUID()),
    };
    const startNode = () =>
      new WithStartWorkflowOperation(NODE_WORKFLOW_TYPE, {
        ...nodeStart(nodeName),
        workflowId: nodeWorkflowId(nodeName),
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    const withStart = () =>
      client.workflow.executeUpdateWithStart(batchUpdate, {
        ...options,
        startWorkflowOperation: startNode(),
      });
    const call = operations.some((op) => op.kind === 'allocate')
      ? () =>
          withStart().catch(async (err: unknown) => {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
            await restartNode(nodeName);
            return withStart();
          })
      : () => client.workflow.getHandle(nodeWorkflowId(nodeName)).executeUpdate(batchUpdate, options);
    // Gone (releases only: a batch with an allocation starts the node): nothing was held.
    const nothingHeld = operations.map((op) => ({ id: op.id, grants: [] }));
    return unlessGone(
      () => client.withDeadline(Date.now() + BATCH_DEADLINE_MS, () => callUpdate(call)),
      nothingHeld,
    );
  };
  const batches = new NodeBatches(sendBatch, new RebuildRequests(client, rebuildUpdate));

  /**
   * An operation's grants; its failure as the ApplicationFailure the lease decides on. A local
   * activity does not wait for a node that asks for the operation again (rebuilding its table, or
   * continuing as new): it holds its lease's workflow task, which a rebuild's query of that lease
   * waits for. The lease goes on with the same call as an ordinary activity (workflows/lease/addresses).
   */
  const submit = async (nodeName: string, op: NodeOperation): Promise<AddressGrant[]> => {
    const local = asyncLocalStorage.getStore()?.info.isLocal === true;
    try {
      return await batches.submit(nodeName, op, !local);
    } catch (err) {
      if (err instanceof SendAgain) throw ApplicationFailure.retryable(err.message, err.why);
      if (!(err instanceof OperationFailed)) throw err;
      const { message, type, nonRetryable } = err.failure;
      throw ApplicationFailure.create({ message, type, nonRetryable });
    }
  };

  return {
    produceAddresses: (input: ProduceInput): Promise<Produced> =>
      beating(async () => {
        const pool = poolSpec(config, input.pool);
        const incarnation = await currentIncarnation(input.nodeName);
        const addresses = await submit(input.nodeName, {
          kind: 'allocate',
          id: allocateUpdateId(input.leaseId, input.run),
          request: {
            owner: input.leaseId,
            podUid: input.podUid,
            pool,
            incarnation,
            run: input.run,
            ...(input.addresses ? { addresses: input.addresses } : {}),
            ...(input.reservation ? { reservation: input.reservation } : {}),
          },
        });
        return { addresses, activation: config.activation };
      }),

    returnAddresses: (input: Omit<ProduceInput, 'podUid'>): Promise<AddressGrant[]> =>
      beating(() =>
        submit(input.nodeName, {
          kind: 'release',
          id: releaseUpdateId(input.leaseId, input.run),
          request: {
            owner: input.leaseId,
            pool: input.pool,
            cooldownMs: config.reuseCooldownSeconds * 1000,
            run: input.run,
          },
        }),
      ),
  };
}
