// What one pod or one node means for netlease, decided in one place and used by both the watchers
// (edge: an event, then a verifying quorum read) and the reconciler (level: a quorum list), like a
// controller's Reconcile: the same facts always give the same action.
import { isTerminal, type PodFact } from './k8s';

/** What the control plane knows of an open lease (from visibility). */
export interface LeaseFacts {
  podUid: string;
  podRef: string;
  phase: string;
}

export type PodDecision =
  { action: 'release'; reason: string } | { action: 'confirmRunning' } | { action: 'keep'; why: string };

/** Phases a Running pod still has to be confirmed for (the lease remembers it if not yet Active). */
const AWAITING_RUNNING = new Set(['Producing', 'Produced', 'Consumed', 'Activating', 'Active', 'Stalled']);
/** A lease in these phases has its release: another one would only cost it a workflow task. */
const RELEASING = new Set(['Releasing', 'Released']);

/**
 * `pod`: the pod with the lease's UID from a quorum read, or undefined when no pod has that UID.
 * Released only when the pod is gone or terminal, never for a pod that exists otherwise, whatever
 * its phase or IPs (seed 001); a Terminating pod still exists, its sandbox may still run. A lease
 * is sent only what it does not have yet: no release once it is releasing.
 */
export function decidePod(lease: LeaseFacts, pod: PodFact | undefined): PodDecision {
  if (RELEASING.has(lease.phase)) return { action: 'keep', why: 'lease is already releasing' };
  if (!pod)
    return { action: 'release', reason: `pod ${lease.podRef} (uid ${lease.podUid}) no longer exists` };
  if (pod.uid !== lease.podUid)
    return { action: 'release', reason: `pod ${lease.podRef} now has uid ${pod.uid}` };
  if (isTerminal(pod.phase)) return { action: 'release', reason: `pod ${lease.podRef} is ${pod.phase}` };
  if (pod.phase === 'Running' && AWAITING_RUNNING.has(lease.phase)) return { action: 'confirmRunning' };
  return { action: 'keep', why: pod.terminating ? 'pod is terminating' : `pod is ${pod.phase}` };
}

export interface NodeDecision {
  /** This incarnation is over: compensate it. */
  deleted?: string;
  /** The node's current incarnation, to tell the node workflow. */
  observed?: string;
}

/**
 * `knownUid`: the incarnation the caller knows (the node workflow's, or a watch event's; undefined
 * when it knows none); `liveUid`: the UID a quorum read returned, undefined when no Node has the
 * name. A Terminating Node still exists: it keeps its incarnation until it is gone (seed 000).
 */
export function decideNode(knownUid: string | undefined, liveUid: string | undefined): NodeDecision {
  return {
    ...(knownUid && knownUid !== liveUid ? { deleted: knownUid } : {}),
    ...(liveUid && liveUid !== knownUid ? { observed: liveUid } : {}),
  };
}

/**
 * Whether a watched Node may tell its node workflow, which holds incarnation `knownUid` ('' for
 * none), anything: a UID it does not hold, or the end of the one it holds. Only then is a quorum
 * read worth making (decideNode decides on that read, never on the event).
 */
export function nodeEventAsks(knownUid: string, watched: { uid: string; deleted: boolean }): boolean {
  return watched.deleted ? watched.uid === knownUid : watched.uid !== knownUid;
}

/**
 * Whether the node agent produces a lease for this pod before its ADD: bound to this node, with
 * a network of its own, and not on its way out. The pod comes from a quorum read (seed 002).
 */
export function shouldPreProduce(pod: PodFact | undefined, nodeName: string): pod is PodFact {
  return (
    pod !== undefined &&
    pod.nodeName === nodeName &&
    !pod.hostNetwork &&
    !pod.terminating &&
    !isTerminal(pod.phase)
  );
}
