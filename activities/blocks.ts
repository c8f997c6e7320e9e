// Blocks for node incarnations, from the pool workflow. Hand-outs go as batches (one update in
// flight per pool and control worker, activities/update-batches): many nodes asking at once (a
// cluster coming up) would otherwise pass the server's 10 in-flight updates on the one pool
// workflow and be refused and retried with back-off (docs/benchmarks.md, "Scale").
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  type Client,
} from '@temporalio/client';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import { poolBatchUpdateId, poolWorkflowId } from '../domain/ids';
import {
  acquireBlocksUpdate,
  moveBlocksUpdate,
  POOL_WORKFLOW_TYPE,
  rebuildPoolUpdate,
  returnBlocksUpdate,
  type BlockOutcome,
  type BlockRequest,
} from '../workflows/pool-messages';
import { FailureType } from '../domain/lease';
import type { ControlDeps } from './deps';
import { callUpdate } from './update-call';
import { UpdateBatches, type Settled } from './update-batches';
import { RebuildRequests } from './rebuild-requests';
import { poolStart, startPoolAgain } from '../temporal/pools';
import { compensationBlocksReturned } from '../observability/control-metrics';
import { staticAddressHolder } from './static-holder';

export interface AcquireBlockInput {
  pool: PoolSpec;
  node: string;
  incarnation: string;
  family: Family;
  updateId: string;
  /** A static address's pinned block (domain/static-addresses) instead of the pool's next free one. */
  block?: string;
  /** The sticky reservation the pinned address is for (domain/sticky-addresses). */
  reservation?: string;
}

export interface MoveBlocksInput {
  pool: string;
  node: string;
  from: string;
  to: string;
  blocks: string[];
  updateId: string;
}

export interface ReturnBlocksInput {
  pool: string;
  node: string;
  incarnation: string;
  blocks?: string[];
  updateId: string;
  /** A static address's pinned block going back after its release (not compensation). */
  pinned?: boolean;
}

/**
 * A hand-out's outcome as the node workflow's activity answers it: the block, or the pool's
 * failure. A pool rebuilding its blocks is asked again; one whose blocks are not verified (a reset
 * run) is asked to rebuild (`rebuild`), and then again.
 */
function settleHandOut(
  rebuilds: RebuildRequests,
  pool: string,
  request: BlockRequest,
  outcome: BlockOutcome | undefined,
): Settled<string> {
  if (!outcome) return { error: new Error(`pool ${pool} did not answer ${request.id}`) };
  if ('block' in outcome) return { value: outcome.block };
  const { message, type, nonRetryable, run } = outcome.failure;
  if (type === FailureType.tableRebuilding) return { again: true };
  if (type === FailureType.tableUnverified && run) return rebuilds.ask(poolWorkflowId(pool), run);
  return { error: ApplicationFailure.create({ message, type, nonRetryable }) };
}

/** A static address refused as held in another node's block: the refusal names who holds it there. */
async function namingTheHolder(client: Client, pool: string, block: string, err: unknown): Promise<unknown> {
  if (!(err instanceof ApplicationFailure) || err.type !== FailureType.staticAddressHeld) return err;
  const holder = await staticAddressHolder(client, pool, block.split('/')[0] ?? '');
  if (!holder) return err;
  const { type, nonRetryable } = err;
  return ApplicationFailure.create({
    message: `${err.message}; ${holder}`,
    type,
    nonRetryable: nonRetryable ?? false,
  });
}

export function blockActivities({ client, config }: ControlDeps) {
  const spec = (pool: string, requests: BlockRequest[]): PoolSpec =>
    config.pools.find((p) => p.name === pool) ?? (requests[0]?.spec as PoolSpec);
  /**
   * One batch of hand-outs. A pool workflow that never ran starts with it; one that ran and closed
   * is started again on purpose (temporal/start-again), and rebuilds its blocks first.
   */
  const sendHandOuts = (pool: string, requests: BlockRequest[]): Promise<BlockOutcome[]> => {
    const withStart = () =>
      client.workflow.executeUpdateWithStart(acquireBlocksUpdate, {
        args: [requests],
        updateId: poolBatchUpdateId(pool, randomUUID()),
        startWorkflowOperation: new WithStartWorkflowOperation(POOL_WORKFLOW_TYPE, {
          ...poolStart(config, spec(pool, requests)),
          workflowId: poolWorkflowId(pool),
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        }),
      });
    return callUpdate(() =>
      withStart().catch(async (err: unknown) => {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        await startPoolAgain(client, config, spec(pool, requests));
        return withStart();
      }),
    );
  };
  const rebuilds = new RebuildRequests(client, rebuildPoolUpdate);
  const handOuts = new UpdateBatches(
    sendHandOuts,
    (pool: string, request: BlockRequest, outcome?: BlockOutcome) =>
      settleHandOut(rebuilds, pool, request, outcome),
  );

  return {
    /** The node's deterministic update id is the hand-out's id: a retried activity gets the same block. */
    async acquireBlock(input: AcquireBlockInput): Promise<string> {
      const { pool, node, incarnation, family, updateId, block, reservation } = input;
      const pinned = { ...(block ? { block } : {}), ...(reservation ? { reservation } : {}) };
      try {
        return await handOuts.submit(pool.name, {
          id: updateId,
          node,
          incarnation,
          family,
          spec: pool,
          ...pinned,
        });
      } catch (err) {
        throw block ? await namingTheHolder(client, pool.name, block, err) : err;
      }
    },

    /** A node's new incarnation adopted these blocks of the old one (compensation, living pods). */
    moveBlocks(input: MoveBlocksInput): Promise<string[]> {
      const { pool, node, from, to, blocks, updateId } = input;
      return callUpdate(() =>
        client.workflow
          .getHandle(poolWorkflowId(pool))
          .executeUpdate(moveBlocksUpdate, { args: [{ node, from, to, blocks }], updateId }),
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
      // Compensation returns blocks (a gone incarnation's last step), and a static address's pinned one.
      if (!input.pinned) compensationBlocksReturned.inc({ pool: input.pool }, returned.length);
      return returned;
    },
  };
}
