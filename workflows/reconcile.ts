// reconcile: run by a Temporal Schedule and once at control-worker start. The comparison happens
// in one activity; only the summary enters history.
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import type { ReconcileSummary } from '../activities/reconcile';

const { reconcileCluster } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['InvalidConfig'] },
});

export async function reconcileWorkflow(): Promise<ReconcileSummary> {
  setCurrentDetails('comparing the known leases and nodes with a quorum list of the cluster');
  const summary = await reconcileCluster();
  setCurrentDetails(
    `${summary.leases} leases / ${summary.pods} pods / ${summary.nodes} nodes: released ${summary.released}, ` +
      `confirmed Running ${summary.confirmedRunning}, nodes deleted ${summary.nodesDeleted}, replaced ${summary.nodesReplaced}`,
  );
  return summary;
}
