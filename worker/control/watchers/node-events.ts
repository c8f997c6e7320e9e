// Node events are hints too. reconcileNode reads the node workflow by its id (its incarnation, from
// a describe: no visibility) and, only when the Node watched may tell it something it does not
// hold, reads the Node's UID by quorum; decideNode makes the call on that read, as in the
// reconciler. A name with no node workflow on this task queue is left alone: the watch never
// starts (resurrects) one.
import type { Client } from '@temporalio/client';
import { decideNode, nodeEventAsks } from '../../../domain/cluster-decisions';
import { NodeSchema } from '../../../domain/k8s';
import type { ClusterReader } from '../../../kubernetes/cluster-reader';
import { applyNodeDecision } from '../../../temporal/signals';
import { describeNode } from '../../../temporal/visibility';
import type { WatchEventType } from './pod-events';

/** unknown: no node workflow of that name; settled: it holds what the Node says; told: signalled. */
export type NodeOutcome = 'ignored' | 'stale' | 'unknown' | 'settled' | 'told';

export class NodeEvents {
  constructor(
    private readonly reader: ClusterReader,
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  async handle(type: WatchEventType, object: unknown): Promise<NodeOutcome> {
    const parsed = NodeSchema.safeParse(object);
    if (!parsed.success || type === 'BOOKMARK' || type === 'ERROR') return 'ignored';
    const { name, uid, resourceVersion } = parsed.data.metadata;
    if (!this.reader.newest.admit(uid, resourceVersion)) return 'stale';
    return this.reconcileNode(name, { uid, deleted: type === 'DELETED' });
  }

  /** Brings node workflow `name` in line with its Node; `watched`: the Node as last watched. */
  async reconcileNode(name: string, watched: { uid: string; deleted: boolean }): Promise<NodeOutcome> {
    const known = await describeNode(this.client, this.taskQueue, name);
    if (!known) return 'unknown';
    if (!nodeEventAsks(known.uid, watched)) return 'settled';
    const live = await this.reader.nodeUid(name);
    const done = await applyNodeDecision(this.client, name, decideNode(known.uid || undefined, live));
    return done.deleted || done.observed ? 'told' : 'settled';
  }
}
