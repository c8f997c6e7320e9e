// Deterministic workflow ids: the same request always reaches the same workflow.

const CONTAINER_POD_UID = 'ctr-';

/**
 * The pod UID a lease is keyed by: K8S_POD_UID, or without it (cnitool by hand) `ctr-` and the
 * container id's first 64 characters, so ADD and DEL of the same container still meet in one lease.
 */
export const leasePodUid = (k8sPodUid: string | undefined, containerId: string): string =>
  k8sPodUid || `${CONTAINER_POD_UID}${containerId.slice(0, 64)}`;

/** A lease made without K8S_POD_UID (cnitool by hand): its container id stands in, no pod to compare. */
export const madeByHand = (podUid: string): boolean => podUid === '' || podUid.startsWith(CONTAINER_POD_UID);

export const leaseWorkflowId = (podUid: string, ifName: string): string => `lease/${podUid}/${ifName}`;
export const nodeWorkflowId = (nodeName: string): string => `node/${nodeName}`;
export const poolWorkflowId = (poolName: string): string => `pool/${poolName}`;
/** The reconciler's Temporal Schedule: one per control-plane task queue. */
export const reconcileScheduleId = (taskQueue: string): string => `reconcile/${taskQueue}`;
/**
 * The coordination Lease by which control workers take turns at the watches: a DNS subdomain
 * (lower case, runs of other characters as one "-"), its task queue's own by a hash of the raw
 * name (`Control` and `control` are two queues, two Leases).
 */
export function watchLeaseName(taskQueue: string): string {
  const readable = taskQueue
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200);
  return `netlease-watch-${readable ? `${readable}-` : ''}${fnv1a(taskQueue)}`;
}

/** FNV-1a, 32 bits, as 8 hex digits: a short stable hash (this module stays pure). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/**
 * Update ids of the shim's calls: one per CNI call. Temporal answers a reused id with the earlier
 * outcome, so a runtime repeating ADD after error 11 would get the stale error; the handlers find
 * the attachment by container and interface, which makes a repeated call idempotent anyway.
 */
export const addUpdateId = (containerId: string, ifName: string, call: string): string =>
  `add/${containerId}/${ifName}/${call}`;
export const delUpdateId = (containerId: string, ifName: string, call: string): string =>
  `del/${containerId}/${ifName}/${call}`;

/**
 * Ids of a lease run's allocation and release, operations of the node's batch update: derived
 * from the caller so retries de-duplicate (the node remembers each answer by its id).
 */
export const allocateUpdateId = (leaseId: string, run: string): string => `allocate/${leaseId}/${run}`;
export const releaseUpdateId = (leaseId: string, run: string): string => `release/${leaseId}/${run}`;
/** A batch of a node's allocations and releases: unique per call, its operations keep their ids. */
export const nodeBatchUpdateId = (nodeName: string, unique: string): string => `batch/${nodeName}/${unique}`;
export const poolBatchUpdateId = (poolName: string, unique: string): string => `blocks/${poolName}/${unique}`;
/** One block request of a node run; `run` (newer runs) keeps a restarted node's requests its own. */
export const acquireBlockUpdateId = (
  node: string,
  incarnation: string,
  family: number,
  seq: number,
  run?: string,
): string => `acquire/${node}/${incarnation}/${family}/${run ? `${run}/` : ''}${seq}`;
/** The node agent's `offer` of a lease: unique per call (the lease answers every one the same). */
export const offerUpdateId = (unique: string): string => `offer/${unique}`;
/** The node agent's confirmation of an ADD it answered from its offer: one per sandbox and run. */
export const confirmAnswerUpdateId = (containerId: string, ifName: string, run: string): string =>
  `confirm-answer/${containerId}/${ifName}/${run}`;
