// The control worker's metrics (netlease_*): leases by phase and addresses per pool and node,
// sampled periodically from Temporal (worker/metrics-sampler), and the reconciler's runs.
import { Counter, Gauge, Registry } from 'prom-client';
import type { FamilyUse } from '../domain/pool-use';

export const controlRegistry = new Registry();

export const leasesByPhase = new Gauge({
  name: 'netlease_leases',
  help: 'Open lease workflows of this control plane by LeasePhase (Temporal visibility counts, sampled).',
  labelNames: ['phase'] as const,
  registers: [controlRegistry],
});

export const leasesParked = new Gauge({
  name: 'netlease_leases_parked',
  help: 'Leases parked in ActivationFailed: activation retries spent; send "retry" after fixing the cause.',
  registers: [controlRegistry],
});

export const leasesStalled = new Gauge({
  name: 'netlease_leases_stalled',
  help: 'Leases Active for longer than activation.stalledAfterSeconds without their pod Running.',
  registers: [controlRegistry],
});

const addressLabels = ['pool', 'node', 'family'] as const;
export const addressesUsed = new Gauge({
  name: 'netlease_addresses_used',
  help: "Addresses held by leases, per pool, node and IP family (the node workflow's table, sampled).",
  labelNames: addressLabels,
  registers: [controlRegistry],
});
export const addressesFree = new Gauge({
  name: 'netlease_addresses_free',
  help: "Addresses that could be handed out now from the node's blocks (not held, cooling, gateway or excluded).",
  labelNames: addressLabels,
  registers: [controlRegistry],
});
export const addressesCooling = new Gauge({
  name: 'netlease_addresses_cooling',
  help: 'Released addresses waiting out reuseCooldownSeconds before they can be handed out again.',
  labelNames: addressLabels,
  registers: [controlRegistry],
});

/** The states of a pool's addresses, as domain/pool-use counts them. */
const POOL_STATES = ['capacity', 'allocated', 'reserved', 'cooldown', 'leaked'] as const;

export const poolAddresses = new Gauge({
  name: 'netlease_pool_addresses',
  help: "A pool's addresses per family by state: capacity, allocated (leaked included), reserved (free in nodes' blocks), cooldown, leaked.",
  labelNames: ['pool', 'family', 'state'] as const,
  registers: [controlRegistry],
});

/** Each pool's use as netlease_pool_addresses (the NetleasePool status's counts). */
export function showPoolUse(uses: Map<string, FamilyUse[]>): void {
  for (const [pool, families] of uses)
    for (const use of families)
      for (const state of POOL_STATES)
        poolAddresses.set({ pool, family: `ipv${use.family}`, state }, use[state]);
}

export const compensationsInProgress = new Gauge({
  name: 'netlease_compensations_in_progress',
  help: 'Retired node incarnations whose leases and blocks are being given back (node workflow state, sampled).',
  labelNames: ['node'] as const,
  registers: [controlRegistry],
});

export const compensationBlocksReturned = new Counter({
  name: 'netlease_compensation_blocks_returned_total',
  help: 'Blocks a compensation gave back to the pool (the last step of compensating a gone incarnation).',
  labelNames: ['pool'] as const,
  registers: [controlRegistry],
});

export const nodeWorkflowRestarts = new Counter({
  name: 'netlease_node_workflow_restarts_total',
  help: 'Node workflows started again after their run closed (terminated, failed), by how it closed; each rebuilds its table from the leases.',
  labelNames: ['status'] as const,
  registers: [controlRegistry],
});

export const leakedAddressesCollected = new Counter({
  name: 'netlease_leaked_addresses_collected_total',
  help: 'Addresses whose lease workflow closed without returning them (terminated, failed, timed out), returned to their node by the reconciler because their pod is gone.',
  labelNames: ['pool'] as const,
  registers: [controlRegistry],
});

export const leasesRecovered = new Counter({
  name: 'netlease_leases_recovered_total',
  help: 'Lease workflows closed without a release (terminated, failed, timed out) while their pod still runs, started again by the reconciler with what they held.',
  registers: [controlRegistry],
});

export const reconcileRuns = new Counter({
  name: 'netlease_reconcile_runs_total',
  help: 'Reconciler activity attempts by result (ok, error).',
  labelNames: ['result'] as const,
  registers: [controlRegistry],
});

export const reconcileActions = new Counter({
  name: 'netlease_reconcile_actions_total',
  help: "What reconciler runs did: released leases, confirmed Running pods, signalled node deletions and replacements, ended wedged leases and node runs, and deleted StatefulSets' sticky reservations.",
  labelNames: ['action'] as const,
  registers: [controlRegistry],
});

export const reconcileLastSuccess = new Gauge({
  name: 'netlease_reconcile_last_success_timestamp_seconds',
  help: 'When the reconciler last finished a run (Unix time).',
  registers: [controlRegistry],
});

export const reconcileLastReleased = new Gauge({
  name: 'netlease_reconcile_last_released',
  help: 'Leases the last finished reconciler run released.',
  registers: [controlRegistry],
});

export const sampleDuration = new Gauge({
  name: 'netlease_metrics_sample_duration_seconds',
  help: 'How long the last sampling of lease phases and node tables from Temporal took.',
  registers: [controlRegistry],
});

export const sampleErrors = new Counter({
  name: 'netlease_metrics_sample_errors_total',
  help: 'Samplings of lease phases or node tables that failed (the gauges keep their last values).',
  registers: [controlRegistry],
});

export const lastSample = new Gauge({
  name: 'netlease_metrics_last_sample_timestamp_seconds',
  help: 'When lease phases and node tables were last sampled (Unix time).',
  registers: [controlRegistry],
});
