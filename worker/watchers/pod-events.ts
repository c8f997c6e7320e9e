// Pod events are hints: each one that could release or confirm a lease is checked by a quorum
// read of the pod first, and an event older than one already seen is dropped (seed 002).
import type { Client } from '@temporalio/client';
import { isTerminal, PodSchema, podFact } from '../../domain/k8s';
import type { ClusterReader } from '../../kubernetes/cluster-reader';
import { leasesOfPod } from '../../temporal/visibility';
import { signalPodRunning, signalRelease } from '../../temporal/signals';

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
    const wantsRelease = type === 'DELETED' || isTerminal(hint.phase);
    if (!wantsRelease && hint.phase !== 'Running') return 'ignored';
    const live = await this.reader.podLiveness(hint.namespace, hint.name, hint.uid);
    if (wantsRelease) {
      if (live.state === 'alive' && !isTerminal(live.pod.phase)) return 'alive';
      const reason =
        live.state === 'gone' ? live.reason : `pod ${hint.namespace}/${hint.name} is ${live.pod.phase}`;
      for (const lease of await leasesOfPod(this.client, this.taskQueue, hint.uid)) {
        await signalRelease(this.client, lease.workflowId, reason);
      }
      return 'released';
    }
    if (live.state !== 'alive' || live.pod.phase !== 'Running') return 'ignored';
    for (const lease of await leasesOfPod(this.client, this.taskQueue, hint.uid)) {
      await signalPodRunning(this.client, lease.workflowId);
    }
    return 'running';
  }
}
