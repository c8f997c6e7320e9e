// Blocks for node incarnations, from the pool workflow.
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import { poolWorkflowId } from '../domain/ids';
import {
  acquireBlockUpdate,
  POOL_WORKFLOW_TYPE,
  returnBlocksUpdate,
  type PoolInput,
} from '../workflows/pool-messages';
import type { ControlDeps } from './deps';
import { callUpdate } from './update-call';
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

export function blockActivities({ client, config }: ControlDeps) {
  return {
    async acquireBlock(input: AcquireBlockInput): Promise<string> {
      return callUpdate(() =>
        client.workflow.executeUpdateWithStart(acquireBlockUpdate, {
          args: [
            { node: input.node, incarnation: input.incarnation, family: input.family, spec: input.pool },
          ],
          updateId: input.updateId,
          startWorkflowOperation: new WithStartWorkflowOperation(POOL_WORKFLOW_TYPE, {
            workflowId: poolWorkflowId(input.pool.name),
            taskQueue: config.temporal.taskQueue,
            args: [{ spec: input.pool, historyLimit: config.nodeHistoryLimit } satisfies PoolInput],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        }),
      );
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
