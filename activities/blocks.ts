// Blocks for node incarnations, from the pool workflow. Hand-outs go as batches (one update in
// flight per pool and control worker, activities/update-batches): many nodes asking at once (a
// cluster coming up) would otherwise pass the server's 10 in-flight updates on the one pool
// workflow and be refused and retried with back-off (README, "Scale").
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import { poolBatchUpdateId, poolWorkflowId } from '../domain/ids';
import {
  acquireBlocksUpdate,
  POOL_WORKFLOW_TYPE,
  returnBlocksUpdate,
  type BlockOutcome,
  type BlockRequest,
  type PoolInput,
} from '../workflows/pool-messages';
import type { ControlDeps } from './deps';
import { callUpdate } from './update-call';
import { UpdateBatches, type Settled } from './update-batches';
import { compensationBlocksReturned } from '../observability/control-metrics';

export interface AcquireBlockInput {
  pool: PoolSpec;
  node: string;
  incarnation: string;
  family: Family;
  updateId: string;
}

export interface ReturnBlocksInput {
  pool: string;
  node: string;
  incarnation: string;
  blocks?: string[];
  updateId: string;
}

/** A hand-out's outcome as the node workflow's activity answers it: the block, or the pool's failure. */
function settleHandOut(
  pool: string,
  request: BlockRequest,
  outcome: BlockOutcome | undefined,
): Settled<string> {
  if (!outcome) return { error: new Error(`pool ${pool} did not answer ${request.id}`) };
  if ('block' in outcome) return { value: outcome.block };
  const { message, type, nonRetryable } = outcome.failure;
  return { error: ApplicationFailure.create({ message, type, nonRetryable }) };
}

export function blockActivities({ client, config }: ControlDeps) {
  /** One batch of hand-outs; the pool workflow starts if it is not running (its spec: the first request's). */
  const sendHandOuts = (pool: string, requests: BlockRequest[]): Promise<BlockOutcome[]> =>
    callUpdate(() =>
      client.workflow.executeUpdateWithStart(acquireBlocksUpdate, {
        args: [requests],
        updateId: poolBatchUpdateId(pool, randomUUID()),
        startWorkflowOperation: new WithStartWorkflowOperation(POOL_WORKFLOW_TYPE, {
          workflowId: poolWorkflowId(pool),
          taskQueue: config.temporal.taskQueue,
          args: [
            {
              spec: requests[0]?.spec as PoolSpec,
              historyLimit: config.nodeHistoryLimit,
            } satisfies PoolInput,
          ],
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
  const handOuts = new UpdateBatches(sendHandOuts, settleHandOut);

  return {
    /** The node's deterministic update id is the hand-out's id: a retried activity gets the same block. */
    acquireBlock(input: AcquireBlockInput): Promise<string> {
      const { pool, node, incarnation, family, updateId } = input;
      return handOuts.submit(pool.name, { id: updateId, node, incarnation, family, spec: pool });
    },

    async returnBlocks(input: ReturnBlocksInput): Promise<string[]> {
      const handle = client.workflow.getHandle(poolWorkflowId(input.pool));
      const returned = await callUpdate(() =>
        handle.executeUpdate(returnBlocksUpdate, {
          args: [{ node: input.node, incarnation: input.incarnation, blocks: input.blocks }],
          updateId: input.updateId,
        }),
      );
      // Only compensation returns blocks (node workflow, a gone incarnation's last step).
      compensationBlocksReturned.inc({ pool: input.pool }, returned.length);
      return returned;
    },
  };
}
