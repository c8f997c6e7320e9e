// Pod events are hints. The watch loop keys them by pod UID and hands over each pod's latest state;
// reconcilePod reads the pod's leases by id (lease ids are deterministic: no visibility list), and
// only when the state watched says a lease lacks something does it pay for a quorum read of the
// pod, which decides (decidePod, the reconciler's call too). An event older than one already seen
// is dropped (seed 002). Each lease run is sent only what it does not have yet.
import type { Client } from '@temporalio/client';
import { decidePod, type PodDecision } from '../../../domain/cluster-decisions';
import { DEFAULT_NETWORK_IFNAME } from '../../../domain/conflist';
import { isTerminal, PodSchema, podFact, type PodFact } from '../../../domain/k8s';
import type { ClusterReader } from '../../../kubernetes/cluster-reader';
import { applyPodDecision } from '../../../temporal/signals';
import { leasesOfPodById, type LeaseExecution } from '../../../temporal/visibility';
import { SentSignals } from './sent-signals';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR' | string;
/** settled: no lease of the pod lacks what its state asks (or it has none); no quorum read made. */
export type PodOutcome = 'stale' | 'ignored' | 'settled' | 'alive' | 'released' | 'running';

export class PodEvents {
  private readonly sent = new SentSignals();

  constructor(
    private readonly reader: ClusterReader,
    private readonly client: Client,
    private readonly taskQueue: string,
    /** The interfaces a pod's leases may be on (kubernetes.podInterfaces). */
    private readonly interfaces: readonly string[] = [DEFAULT_NETWORK_IFNAME],
  ) {}

  async handle(type: WatchEventType, object: unknown): Promise<PodOutcome> {
    const parsed = PodSchema.safeParse(object);
    if (!parsed.success || type === 'BOOKMARK' || type === 'ERROR') return 'ignored';
    const latest = podFact(parsed.data);
    if (!this.reader.newest.admit(latest.uid, latest.resourceVersion)) return 'stale';
    const deleted = type === 'DELETED';
    // Only these can change a lease; anything else waits for the reconciler.
    if (!deleted && !isTerminal(latest.phase) && latest.phase !== 'Running') return 'ignored';
    return this.reconcilePod({ ...latest, deleted });
  }

  /**
   * Brings the leases of the pod with `watched.uid` in line with it. `watched` is its latest
   * watched state (the quorum read asks for its namespace and name); it only decides whether that
   * read is worth making: a lease is sent what the read says it lacks.
   */
  async reconcilePod(watched: WatchedPod): Promise<PodOutcome> {
    const leases = await leasesOfPodById(this.client, this.taskQueue, watched.uid, this.interfaces);
    const hint = watched.deleted ? undefined : watched;
    if (!leases.some((lease) => this.lacks(lease, decidePod(lease, hint)))) return 'settled';
    const pod = await this.reader.readPod(watched.namespace, watched.name);
    const done: Sent[] = [];
    for (const lease of leases) done.push(await this.send(lease, decidePod(lease, pod)));
    if (done.includes('released')) return 'released';
    if (done.includes('confirmedRunning')) return 'running';
    // Nothing sent: the hint said gone or terminal, or a lease lacked Running, and the read says otherwise.
    return pod?.uid === watched.uid ? 'alive' : 'settled';
  }

  private lacks(lease: LeaseExecution, decision: PodDecision): boolean {
    return decision.action !== 'keep' && !this.sent.has(lease.runId, decision.action);
  }

  private async send(lease: LeaseExecution, decision: PodDecision): Promise<Sent> {
    if (decision.action === 'keep' || this.sent.has(lease.runId, decision.action)) return 'kept';
    const done = await applyPodDecision(this.client, lease.workflowId, decision, 'watcher', lease.runId);
    if (done !== 'kept') this.sent.add(lease.runId, decision.action);
    return done;
  }
}

type Sent = Awaited<ReturnType<typeof applyPodDecision>>;

/** A pod as last watched; `deleted`: that was its deletion (the DELETED event's object). */
export type WatchedPod = PodFact & { deleted: boolean };
