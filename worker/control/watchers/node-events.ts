// Node events are hints too: the node's current UID comes from a quorum read before the node
// workflow hears of a new incarnation or a deletion; decideNode makes the call, as in the reconciler.
import type { Client } from '@temporalio/client';
import { decideNode } from '../../../domain/cluster-decisions';
import { NodeSchema } from '../../../domain/k8s';
import type { ClusterReader } from '../../../kubernetes/cluster-reader';
import { applyNodeDecision } from '../../../temporal/signals';
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
    // An ADDED node may be a new incarnation the node workflow has not seen: tell it.
    await applyNodeDecision(this.client, name, decideNode(type === 'ADDED' ? undefined : uid, current));
  }
}
