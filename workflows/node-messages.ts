// Messages of node/<nodeName> (the node's single writer of addresses), in a module of their own
// so activities, watchers, tests and the CLI use them without importing the workflow.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AddressGrant, Allocation, AllocationTable } from '../domain/allocation';
import type { PoolSpec } from '../domain/config';
import type { RememberedResults } from './remembered-results';

export interface NodeState {
  /** Current incarnation (Kubernetes node UID); '' until one is observed or after deletion. */
  incarnation: string;
  /** Past incarnations whose leases are being released (compensation), uid → why. */
  retired: Record<string, string>;
  /** Incarnations that are over: never current again, whatever a stale event says. */
  past: string[];
  pools: Record<string, PoolSpec>;
  /** pool name → allocation table. */
  tables: Record<string, AllocationTable>;
  /** Blocks requested so far (all pools and families): makes acquire update ids deterministic. */
  blockRequests: number;
  /** Lease runs (`owner@run`) whose addresses were returned: a late allocate is refused. Bounded. */
  releasedRuns?: string[];
  results: RememberedResults;
}

export interface NodeInput {
  nodeName: string;
  historyLimit: number;
  state?: NodeState;
}

export interface AllocateRequest {
  owner: string;
  podUid: string;
  pool: PoolSpec;
  /** Node UID read (quorum) when the request was made; '' without a cluster. */
  incarnation?: string;
  /** The lease workflow's run: a lease id is reused by a later run after release. */
  run?: string;
}

export interface ReleaseAddressRequest {
  owner: string;
  pool: string;
  cooldownMs: number;
  run?: string;
}

export interface IncarnationEvent {
  uid: string;
}

export const NODE_WORKFLOW_TYPE = 'nodeWorkflow';

export const allocateUpdate = defineUpdate<AddressGrant[], [AllocateRequest]>('allocate');
/** Imports an allocation made elsewhere; refuses an address another owner holds (seed 000). */
export const loadAllocationUpdate = defineUpdate<void, [{ pool: PoolSpec; allocation: Allocation }]>(
  'loadAllocation',
);
/** The node with this name has this UID now (watch event or reconciler). */
export const nodeObservedSignal = defineSignal<[IncarnationEvent]>('nodeObserved');
/** The node incarnation with this UID is gone (verified by a quorum read). */
export const nodeDeletedSignal = defineSignal<[IncarnationEvent]>('nodeDeleted');
export const releaseUpdate = defineUpdate<AddressGrant[], [ReleaseAddressRequest]>('release');
export const nodeStateQuery = defineQuery<NodeState>('state');
