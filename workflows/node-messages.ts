// Messages of node/<nodeName> (the node's single writer of addresses), in a module of their own
// so activities, watchers, tests and the CLI use them without importing the workflow.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AddressGrant, Allocation, AllocationTable } from '../domain/allocation';
import type { PoolSpec } from '../domain/config';
import type { RebuildRequest } from '../domain/node-requests';
import type { RebuildReport } from '../domain/table-rebuild';
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
  /** The run whose table a rebuild verified against the leases and pools (workflows/node/rebuild). */
  trustedRun?: string;
  /** Whether the run that continued into this one had a verified table (absent: before rebuilds existed). */
  trustCarried?: boolean;
}

export interface NodeInput {
  nodeName: string;
  historyLimit: number;
  state?: NodeState;
  /** Why the control worker started this run after an earlier one closed (it rebuilds its table). */
  restartedAfter?: string;
}

export interface AllocateRequest {
  owner: string;
  podUid: string;
  pool: PoolSpec;
  /** Node UID read (quorum) when the request was made; '' without a cluster. */
  incarnation?: string;
  /** The lease workflow's run: a lease id is reused by a later run after release. */
  run?: string;
  /** The pod's static addresses (domain/static-addresses): these, not the next free ones. */
  addresses?: string[];
  /** The sticky reservation they are (domain/sticky-addresses): a refusal is the fence's. */
  reservation?: string;
}

export interface ReleaseAddressRequest {
  owner: string;
  pool: string;
  cooldownMs: number;
  run?: string;
}

/**
 * One allocation or release inside a batch. `id` is the lease run's operation id
 * (`allocate/<leaseId>/<run>`, `release/<leaseId>/<run>`): the node remembers answers by it.
 */
export type NodeOperation =
  | { kind: 'allocate'; id: string; request: AllocateRequest }
  | { kind: 'release'; id: string; request: ReleaseAddressRequest };

export interface OperationFailure {
  message: string;
  type: string;
  nonRetryable: boolean;
  /** NodeUnverified: the run whose table needs a rebuild before its answers are used. */
  run?: string;
}

/** Each operation's answer: its grants, or why it failed (a retryable one may be sent again). */
export type OperationOutcome =
  { id: string; grants: AddressGrant[] } | { id: string; failure: OperationFailure };

export interface IncarnationEvent {
  uid: string;
}

export const NODE_WORKFLOW_TYPE = 'nodeWorkflow';

/**
 * Allocations and releases of many leases in one update, applied in order. The server admits at
 * most 10 in-flight updates per workflow (`history.maxInFlightUpdates`): callers queue a burst
 * and send it as batches, one in flight at a time, instead of one update per lease.
 */
export const batchUpdate = defineUpdate<OperationOutcome[], [NodeOperation[]]>('batch');
/** Imports an allocation made elsewhere; refuses an address another owner holds (seed 000). */
export const loadAllocationUpdate = defineUpdate<void, [{ pool: PoolSpec; allocation: Allocation }]>(
  'loadAllocation',
);
/** The node with this name has this UID now (watch event or reconciler). */
export const nodeObservedSignal = defineSignal<[IncarnationEvent]>('nodeObserved');
/** The node incarnation with this UID is gone (verified by a quorum read). */
export const nodeDeletedSignal = defineSignal<[IncarnationEvent]>('nodeDeleted');
/**
 * Verifies the table against the open leases of the node and the pools' blocks, once per run. The
 * control worker sends it when the node answered from a table it cannot vouch for (a reset run:
 * a reset replays an earlier point and reapplies later updates, which may answer differently).
 */
export const rebuildUpdate = defineUpdate<RebuildReport | null, [RebuildRequest]>('rebuild');
export const nodeStateQuery = defineQuery<NodeState>('state');
