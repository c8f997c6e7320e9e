// Pod events are hints: each one that could release or confirm a lease is checked by a quorum
// read of the pod first, and an event older than one already seen is dropped (seed 002). What
// the pod means for each of its leases is decidePod's call, the same as the reconciler's.
import type { Client } from '@temporalio/client';
import { decidePod } from '../../../domain/cluster-decisions';
import { isTerminal, PodSchema, podFact } from '../../../domain/k8s';
import type { ClusterReader } from '../../../kubernetes/cluster-reader';
import { applyPodDecision } from '../../../temporal/signals';
import { leasesOfPod } from '../../../temporal/visibility';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR' | string;
export type PodOutcome = 'stale' | 'ignored' | 'alive' | 'released' | 'running';

export class PodEvents {
  constructor(
    private readonly reader: ClusterReader,
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  async handle(type: WatchEventType, object: unknown): Promise<PodOutcome> {
    const parsed = PodSchema.safeParse(object);
    if (!parsed.success || type === 'BOOKMARK' || type === 'ERROR') return 'ignored';
    const hint = podFact(parsed.data);
    if (!this.reader.newest.admit(hint.uid, hint.resourceVersion)) return 'stale';
    // Only these can change a lease; anything else waits for the reconciler.
    const saysGone = type === 'DELETED' || isTerminal(hint.phase);
    if (!saysGone && hint.phase !== 'Running') return 'ignored';
    const pod = await this.reader.readPod(hint.namespace, hint.name);
    const done = [];
    for (const lease of await leasesOfPod(this.client, this.taskQueue, hint.uid)) {
      done.push(await applyPodDecision(this.client, lease.workflowId, decidePod(lease, pod), 'watcher'));
    }
    if (done.includes('released')) return 'released';
    if (saysGone) return 'alive'; // the hint said gone; the quorum read says otherwise
    if (done.includes('confirmedRunning')) return 'running';
    return pod?.uid === hint.uid ? 'alive' : 'ignored';
  }
}
