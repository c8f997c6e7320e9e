// Messages of pool/<poolName>, in a module of their own so activities and tools use them
// without importing the workflow.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BlockTable } from '../domain/blocks';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import type { RebuildRequest } from '../domain/node-requests';
import type { MoveBlocksRequest, PoolConfiguration } from '../domain/pool-requests';
import type { Reservations } from '../domain/sticky-addresses';
import type { PoolRebuildReport } from '../domain/table-rebuild';
import type { OperationFailure } from './node-messages';
import type { RememberedResults } from './remembered-results';

export interface PoolState {
  spec: PoolSpec;
  blocks: BlockTable;
  results: RememberedResults;
  /** The run whose block table a rebuild verified against the nodes and leases. */
  trustedRun?: string;
  /** Whether the run that continued into this one had a verified table (absent: before rebuilds). */
  trustCarried?: boolean;
  /** Every pool the control worker serves, as it last configured this one (the agents read it). */
  configuredPools?: string[];
  /** Sticky StatefulSet addresses: `<namespace>/<statefulset>/<ordinal>` → its reservation. */
  reservations?: Reservations;
}

export interface PoolInput {
  spec: PoolSpec;
  historyLimit: number;
  state?: PoolState;
  /** Every pool the control worker serves (kept as the run's memo: the node agents read it). */
  configuredPools?: string[];
  /** Why the control worker started this run after an earlier one closed (it rebuilds its blocks). */
  restartedAfter?: string;
}

export interface AcquireBlockRequest {
  node: string;
  incarnation: string;
  family: Family;
  /** The spec of the configuration that asked (the pool's own spec decides: `configure`). */
  spec: PoolSpec;
  /** A static address's pinned block (domain/static-addresses) instead of the next free one. */
  block?: string;
  /** The sticky reservation the pinned address is for (domain/sticky-addresses). */
  reservation?: string;
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
/** The memo key of the pools the control worker serves (the agents tell "starting" from "unknown"). */
export const CONFIGURED_POOLS_MEMO = 'configuredPools';

export const acquireBlockUpdate = defineUpdate<string, [AcquireBlockRequest]>('acquireBlock');
/** Several nodes' hand-outs in one update (the control worker's batches: activities/blocks). */
export const acquireBlocksUpdate = defineUpdate<BlockOutcome[], [BlockRequest[]]>('acquireBlocks');
export const returnBlocksUpdate = defineUpdate<string[], [ReturnBlocksRequest]>('returnBlocks');
/** A node's new incarnation adopted blocks of the old one (its pods' addresses live on). */
export const moveBlocksUpdate = defineUpdate<string[], [MoveBlocksRequest]>('moveBlocks');
/**
 * The control worker's configuration at its start: refused, changing nothing, when it would move
 * addresses out from under handed-out blocks (domain/pool-change).
 */
export const configureUpdate = defineUpdate<PoolSpec, [PoolConfiguration]>('configure');
/** Verifies the block table against the nodes' tables and the leases (a reset run; a fresh one does it itself). */
export const rebuildPoolUpdate = defineUpdate<PoolRebuildReport | null, [RebuildRequest]>('rebuild');
export const poolStateQuery = defineQuery<PoolState>('state');

/** A StatefulSet ordinal's sticky addresses, reserved now if it has none (the node agent's ADD). */
export interface ReserveRequest {
  /** `<namespace>/<statefulset>/<ordinal>` (domain/sticky-addresses). */
  key: string;
}
export const reserveAddressesUpdate = defineUpdate<string[], [ReserveRequest]>('reserveAddresses');
/** Ends the idle reservations of StatefulSets deleted from the cluster (the reconciler's sweep). */
export interface EndReservationsRequest {
  /** `<namespace>/<statefulset>` of each StatefulSet a quorum read found gone. */
  statefulSets: string[];
}
export const endReservationsUpdate = defineUpdate<string[], [EndReservationsRequest]>('endReservations');
/** The sticky reservations, without the block table (the UI's Queries tab, netleasectl). */
export const reservationsQuery = defineQuery<Reservations>('reservations');

/** What a pool serves, without its block table: the node agents' pool catalogue reads it. */
export interface PoolServing {
  spec: PoolSpec;
  /** The address families of its CIDRs. */
  families: Family[];
}
/** A query of its own so the agents' pool selection does not fetch the block table (`state`). */
export const poolSpecQuery = defineQuery<PoolServing>('spec');
