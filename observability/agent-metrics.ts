// The node agent's metrics (netlease_*): CNI calls, the DEL queue, pre-produced leases.
import { Counter, Histogram, Gauge, Registry } from 'prom-client';

export const agentRegistry = new Registry();

/** CNI verbs as labels; anything else (a missing or invalid CNI_COMMAND) is "invalid". */
const VERBS = new Set(['ADD', 'DEL', 'CHECK', 'VERSION', 'GC', 'STATUS']);
export const verbLabel = (command: string | undefined): string =>
  command && VERBS.has(command) ? command : 'invalid';

export const cniRequests = new Counter({
  name: 'netlease_cni_requests_total',
  help: 'CNI calls served by the node agent, by verb and CNI result code (0: success).',
  labelNames: ['verb', 'code'] as const,
  registers: [agentRegistry],
});

export const cniRefusals = new Counter({
  name: 'netlease_cni_refusals_total',
  help: 'CNI calls the node agent refused (a CNI error), by verb and reason (cni/refusals, the start of the error msg).',
  labelNames: ['verb', 'reason'] as const,
  registers: [agentRegistry],
});

export const podEvents = new Counter({
  name: 'netlease_pod_events_total',
  help: 'Events on pods for refused ADDs: created, patched (the same pod and reason again), dropped (queue full), failed.',
  labelNames: ['result'] as const,
  registers: [agentRegistry],
});

export const cniDuration = new Histogram({
  name: 'netlease_cni_request_duration_seconds',
  help: 'Time the node agent took to answer a CNI call, by verb and whether it succeeded.',
  labelNames: ['verb', 'result'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [agentRegistry],
});

export const deletesQueued = new Counter({
  name: 'netlease_cni_deletes_queued_total',
  help: 'DELs the node agent queued on disk because Temporal did not answer (they succeed at once).',
  registers: [agentRegistry],
});

export const queuedDeletesApplied = new Counter({
  name: 'netlease_cni_queued_deletes_applied_total',
  help: 'Queued DELs applied from the on-disk queue (queued by the shim while the agent was away, or by the agent).',
  registers: [agentRegistry],
});

export const queuedDeletesDropped = new Counter({
  name: 'netlease_cni_queued_deletes_dropped_total',
  help: 'Queued DEL files whose content could never be parsed, removed.',
  registers: [agentRegistry],
});

export const deleteQueueLength = new Gauge({
  name: 'netlease_cni_delete_queue_length',
  help: 'DELs waiting in the on-disk queue after the last drain (every 5 s).',
  registers: [agentRegistry],
});

export const preProduced = new Counter({
  name: 'netlease_preproduced_leases_total',
  help: 'Pre-produce starts for pods bound to this node: started (now, or already running), closed (ran before; not restarted), unservedPool (preProduce.pool not served by the control plane yet: asked again later).',
  labelNames: ['result'] as const,
  registers: [agentRegistry],
});

export const offersHeld = new Gauge({
  name: 'netlease_offers_held',
  help: "Pre-produced leases whose grant the node agent holds on disk to answer the pod's first ADD.",
  registers: [agentRegistry],
});

export const offerEvents = new Counter({
  name: 'netlease_offer_events_total',
  help: 'Offers by event: held, answered (an ADD answered from disk), confirmed, refused (the lease ended first), revoked.',
  labelNames: ['event'] as const,
  registers: [agentRegistry],
});
