// Messages of pool/<poolName>, in a module of their own so activities and tools use them
// without importing the workflow.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BlockTable } from '../domain/blocks';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
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

export interface ReturnBlocksRequest {
  node: string;
  incarnation: string;
  blocks?: string[];
}

export const POOL_WORKFLOW_TYPE = 'poolWorkflow';

export const acquireBlockUpdate = defineUpdate<string, [AcquireBlockRequest]>('acquireBlock');
export const returnBlocksUpdate = defineUpdate<string[], [ReturnBlocksRequest]>('returnBlocks');
export const poolStateQuery = defineQuery<PoolState>('state');
