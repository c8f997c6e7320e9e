// Messages of pool/<poolName>, in a module of their own so activities and tools use them
// without importing the workflow.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BlockTable } from '../domain/blocks';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import type { OperationFailure } from './node-messages';
import type { RememberedResults } from './remembered-results';

export interface PoolState {
  spec: PoolSpec;
  blocks: BlockTable;
  results: RememberedResults;
}

export interface PoolInput {
  spec: PoolSpec;
  historyLimit: number;
  state?: PoolState;
}

export interface AcquireBlockRequest {
  node: string;
  incarnation: string;
  family: Family;
  /** The latest spec from the control worker's config. */
  spec: PoolSpec;
}

/**
 * One hand-out of a batch: `id` is the caller's deterministic id for it (the node's
 * `acquireBlockUpdateId`), by which the pool remembers its answer.
 */
export interface BlockRequest extends AcquireBlockRequest {
  id: string;
}

/** Each hand-out's answer: its block, or why there is none. */
export type BlockOutcome = { id: string; block: string } | { id: string; failure: OperationFailure };

export interface ReturnBlocksRequest {
  node: string;
  incarnation: string;
  blocks?: string[];
}

export const POOL_WORKFLOW_TYPE = 'poolWorkflow';

export const acquireBlockUpdate = defineUpdate<string, [AcquireBlockRequest]>('acquireBlock');
/** Several nodes' hand-outs in one update (the control worker's batches: activities/blocks). */
export const acquireBlocksUpdate = defineUpdate<BlockOutcome[], [BlockRequest[]]>('acquireBlocks');
export const returnBlocksUpdate = defineUpdate<string[], [ReturnBlocksRequest]>('returnBlocks');
export const poolStateQuery = defineQuery<PoolState>('state');
