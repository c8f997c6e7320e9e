// The lease checks of `netleasectl check`: each open lease's pod (hand-made leases and leases the
// reconciler is about to release are notes, not problems) and its workflow task (a task that
// keeps failing wedges the lease: nothing it is sent is processed).
import { ScheduleNotFoundError } from '@temporalio/client';
import { madeByHand, reconcileScheduleId } from '../domain/ids';
import type { NodeTables } from '../domain/address-ownership';
import { describeLease, type LeaseExecution } from '../temporal/visibility';
import { FAILING_TASK_REMEDY, failingWorkflowTask } from '../temporal/workflow-task';
import type { Context } from './context';
import { mapLimited } from '../domain/map-limited';

export interface Finding {
  check: 'addresses' | 'pods' | 'blocks' | 'tasks' | 'conflist';
  problem: string;
}

export interface Note {
  check: Finding['check'];
  note: string;
}

export interface LeaseFindings {
  problems: Finding[];
  notes: Note[];
  checked: string[];
}

/**
 * How long a lease with no pod may stay open before it is a problem: twice the reconciler's
 * interval (its next run releases it; one more interval covers a run skipped or slow). A reason
 * instead when no reconciler runs, so nothing will release it.
 */
async function reconcilerBound(context: Context): Promise<{ ms: number } | { why: string }> {
  const id = reconcileScheduleId(context.taskQueue);
  try {
    const schedule = await context.client.schedule.getHandle(id).describe();
    const every = schedule.spec.intervals?.[0]?.every;
    if (schedule.state.paused) return { why: `the reconciler's schedule ${id} is paused` };
    if (!every) return { why: `the reconciler's schedule ${id} has no interval` };
    return { ms: 2 * every };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { why: `no reconciler schedule ${id} exists` };
    throw err;
  }
}

/** Each open lease's pod exists by UID (a quorum list of all pods). */
export async function checkPods(context: Context, leases: LeaseExecution[]): Promise<LeaseFindings> {
  const cluster = await context.cluster();
  if (!cluster)
    return {
      problems: [],
      notes: [],
      checked: ['pods: skipped (no kubeconfig: give --kubeconfig or a config with a kubernetes section)'],
    };
  const pods = new Set((await cluster.listPods()).map((p) => p.uid));
  const findings: LeaseFindings = {
    problems: [],
    notes: [],
    checked: [`pods: ${leases.length} open leases checked against ${pods.size} pods (quorum list)`],
  };
  const missing = leases.filter((l) => !pods.has(l.podUid));
  const bound = missing.some((l) => !madeByHand(l.podUid)) ? await reconcilerBound(context) : undefined;
  for (const lease of missing) {
    const what = `${lease.workflowId} (pod ${lease.podRef || '-'}, phase ${lease.phase})`;
    if (madeByHand(lease.podUid)) {
      findings.notes.push({
        check: 'pods',
        note: `${what} was made by hand without K8S_POD_UID: no pod to check; it is kept until released by hand (netleasectl release)`,
      });
      continue;
    }
    const absent = `no pod has UID ${lease.podUid}`;
    const age = Date.now() - lease.startTime.getTime();
    if (bound && 'ms' in bound && age <= bound.ms) {
      const until = new Date(lease.startTime.getTime() + bound.ms).toISOString();
      findings.notes.push({
        check: 'pods',
        note: `${what}: pending release: ${absent}; the reconciler releases it (a problem if still open at ${until})`,
      });
    } else {
      const why =
        bound && 'why' in bound
          ? bound.why
          : `the reconciler has not released it in ${Math.round((bound?.ms ?? 0) / 1000)} s`;
      findings.problems.push({ check: 'pods', problem: `${what} is open, but ${absent}, and ${why}` });
    }
  }
  return findings;
}

/** No open lease's workflow task keeps failing (a lease that does not move). */
export async function checkTasks(context: Context, leases: LeaseExecution[]): Promise<LeaseFindings> {
  const failing = await mapLimited(leases, 16, (lease) =>
    failingWorkflowTask(context.client, lease.workflowId, lease.runId).catch(() => undefined),
  );
  const problems: Finding[] = [];
  leases.forEach((lease, i) => {
    const task = failing[i];
    if (task)
      problems.push({
        check: 'tasks',
        problem:
          `${lease.workflowId} (pod ${lease.podRef || '-'}, phase ${lease.phase || '-'}) does not move: its workflow task ` +
          `has failed ${task.attempt - 1} time(s): ${task.failure}. Remedy: ${FAILING_TASK_REMEDY}`,
      });
  });
  return { problems, notes: [], checked: [`tasks: ${leases.length} open leases' workflow tasks`] };
}

/** Every owner the node tables hold addresses for. */
export const ownersOf = (nodes: NodeTables[]): Set<string> =>
  new Set(
    nodes.flatMap((n) =>
      Object.values(n.tables).flatMap((t) => Object.values(t.allocations).map((a) => a.owner)),
    ),
  );

/**
 * The open leases as their workflows say now, not as visibility (which lags) listed them: each
 * listed run that is still open, and each owner in the tables that visibility does not list yet.
 */
export async function openLeasesNow(
  context: Context,
  listed: LeaseExecution[],
  owners: Set<string>,
): Promise<LeaseExecution[]> {
  const { client, taskQueue } = context;
  const unlisted = [...owners].filter((owner) => !listed.some((l) => l.workflowId === owner));
  const runs = await mapLimited(
    [
      ...listed.map((l) => [l.workflowId, l.runId] as const),
      ...unlisted.map((id) => [id, undefined] as const),
    ],
    16,
    ([id, runId]) => describeLease(client, taskQueue, id, runId),
  );
  return runs.filter((run): run is LeaseExecution => run?.open === true);
}
