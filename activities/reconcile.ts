// The reconciler's work, all inside one activity so large lists never enter workflow history:
// known set first, then quorum lists, then signals for what was missed (seeds 001 and 004).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ControlDeps } from './deps';
import { knownLeases, knownNodes } from '../temporal/visibility';
import { decideNode, decidePod } from '../domain/cluster-decisions';
import { madeByHand } from '../domain/ids';
import { applyNodeDecision, applyPodDecision } from '../temporal/signals';
import {
  reconcileActions,
  reconcileLastReleased,
  reconcileLastSuccess,
  reconcileRuns,
} from '../observability/control-metrics';

export interface ReconcileSummary {
  leases: number;
  pods: number;
  nodes: number;
  released: number;
  confirmedRunning: number;
  nodesDeleted: number;
  nodesReplaced: number;
  /** Set when the run could not read the cluster (the counts are then 0): why. */
  skipped?: string;
}

export function reconcileActivities({ client, config, reader }: ControlDeps) {
  return {
    async reconcileCluster(): Promise<ReconcileSummary> {
      try {
        const summary = await reconcile();
        reconcileRuns.inc({ result: 'ok' });
        reconcileActions.inc({ action: 'released' }, summary.released);
        reconcileActions.inc({ action: 'confirmed_running' }, summary.confirmedRunning);
        reconcileActions.inc({ action: 'node_deleted' }, summary.nodesDeleted);
        reconcileActions.inc({ action: 'node_replaced' }, summary.nodesReplaced);
        reconcileLastReleased.set(summary.released);
        reconcileLastSuccess.set(Date.now() / 1000);
        Context.current().log.info('reconciled', { ...summary });
        return summary;
      } catch (err) {
        reconcileRuns.inc({ result: 'error' });
        throw err;
      }
    },
  };

  async function reconcile(): Promise<ReconcileSummary> {
    if (!reader)
      throw ApplicationFailure.nonRetryable('no kubernetes section in the config', 'InvalidConfig');
    const beat = (what: string) => (count: number) => Context.current().heartbeat({ what, count });
    const taskQueue = config.temporal.taskQueue;
    // Order matters: a lease known before the pod list was taken belongs to a pod created
    // before it, so a UID absent from the list is a pod that is really gone.
    const leases = await knownLeases(client, taskQueue);
    const nodes = await knownNodes(client, taskQueue);
    const pods = new Map((await reader.listPods(beat('pods'))).map((p) => [p.uid, p]));
    const liveNodes = new Map(
      (await reader.listNodes(beat('nodes'))).map((n) => [n.metadata.name, n.metadata.uid]),
    );
    const summary: ReconcileSummary = {
      leases: leases.length,
      pods: pods.size,
      nodes: liveNodes.size,
      released: 0,
      confirmedRunning: 0,
      nodesDeleted: 0,
      nodesReplaced: 0,
    };
    for (const lease of leases.filter((l) => !madeByHand(l.podUid))) {
      const pod = pods.get(lease.podUid);
      const done = await applyPodDecision(client, lease.workflowId, decidePod(lease, pod), 'reconciler');
      if (done === 'released') summary.released++;
      if (done === 'confirmedRunning') summary.confirmedRunning++;
      Context.current().heartbeat({ what: 'leases' });
    }
    // Never resurrects a node: signals go only to node workflows that exist, never start one.
    for (const node of nodes) {
      const done = await applyNodeDecision(
        client,
        node.name,
        decideNode(node.uid || undefined, liveNodes.get(node.name)),
      );
      if (done.observed) summary.nodesReplaced++;
      else if (done.deleted) summary.nodesDeleted++;
    }
    return summary;
  }
}
