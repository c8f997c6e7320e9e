// Node events are hints too: the node's current UID comes from a quorum read before the node
// workflow hears of a new incarnation or a deletion.
import type { Client } from '@temporalio/client';
import { NodeSchema } from '../../domain/k8s';
import type { ClusterReader } from '../../kubernetes/cluster-reader';
import { signalNodeDeleted, signalNodeObserved } from '../../temporal/signals';
import type { WatchEventType } from './pod-events';

export class NodeEvents {
  constructor(
    private readonly reader: ClusterReader,
    private readonly client: Client,
  ) {}

  async handle(type: WatchEventType, object: unknown): Promise<void> {
    const parsed = NodeSchema.safeParse(object);
    if (!parsed.success || type === 'BOOKMARK' || type === 'ERROR') return;
    const { name, uid, resourceVersion } = parsed.data.metadata;
    if (!this.reader.newest.admit(uid, resourceVersion)) return;
    const current = await this.reader.nodeUid(name);
    if (current !== uid) await signalNodeDeleted(this.client, name, uid);
    if (current !== undefined) await signalNodeObserved(this.client, name, current);
  }
}
