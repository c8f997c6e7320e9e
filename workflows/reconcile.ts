// reconcile: run by a Temporal Schedule and once at control-worker start. The comparison happens
// in one activity; only the summary enters history. A run that cannot read the cluster (the API
// down through its three attempts) completes as skipped rather than failing: the next scheduled
// run tries again, and the metrics (reconcile runs by result, last success) say it was missed.
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import type { ReconcileSummary } from '../activities/reconcile';

const { reconcileCluster } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['InvalidConfig'] },
});

/** A config that cannot work is a failure to see; an unreachable cluster is a skipped run. */
const isSkippable = (err: unknown): err is ActivityFailure =>
  err instanceof ActivityFailure &&
  !(err.cause instanceof ApplicationFailure && err.cause.type === 'InvalidConfig');

const skipped = (why: string): ReconcileSummary => ({
  leases: 0,
  pods: 0,
  nodes: 0,
  released: 0,
  confirmedRunning: 0,
  nodesDeleted: 0,
  nodesReplaced: 0,
  skipped: why,
});

export async function reconcileWorkflow(): Promise<ReconcileSummary> {
  setCurrentDetails('comparing the known leases and nodes with a quorum list of the cluster');
  let summary: ReconcileSummary;
  try {
    summary = await reconcileCluster();
  } catch (err) {
    if (!isSkippable(err)) throw err;
    const why = err.cause?.message ?? err.message;
    setCurrentDetails(`skipped: the cluster could not be read (${why}); the next scheduled run tries again`);
    return skipped(why);
  }
  setCurrentDetails(
    `${summary.leases} leases / ${summary.pods} pods / ${summary.nodes} nodes: released ${summary.released}, ` +
      `confirmed Running ${summary.confirmedRunning}, nodes deleted ${summary.nodesDeleted}, replaced ${summary.nodesReplaced}`,
  );
  return summary;
}
