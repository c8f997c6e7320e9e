// Leases that do not move (docs/operating.md): a workflow task that fails on every attempt (a
// history the worker cannot run, such as the SDK's update order, docs/testing.md "The soak") leaves
// the lease's signals and updates unprocessed for good, and only a terminate ended it. The sweep
// ends such a run itself. The lease is then a closed lease whose addresses its node's table still
// holds (terminating a run leaves the table alone: nothing is handed out meanwhile), which the
// sweep's leak collection starts again with its sandboxes (pod running) or collects (pod gone).
import type { Client } from '@temporalio/client';
import type { WedgedLeases } from '../domain/config';
import { mapLimited } from '../domain/map-limited';
import type { KnownLease } from '../temporal/visibility';
import { unlessGone } from '../temporal/workflow-gone';
import { failingWorkflowTask, type FailingTask } from '../temporal/workflow-task';

/** A lease run the sweep ended, and why. */
export interface EndedLease {
  workflowId: string;
  runId: string;
  podRef: string;
  attempt: number;
  failure: string;
}

/** Describes at once (each a small read of the workflow's own state). */
const DESCRIBES_AT_ONCE = 16;

/** Where the next run's checks start: with more open leases than a run checks, they take turns. */
let nextTurn = 0;

/** This run's share of the open leases, by workflow id, from where the last run stopped. */
export function leasesToCheck(leases: KnownLease[], perRun: number): KnownLease[] {
  const sorted = [...leases].sort((a, b) => a.workflowId.localeCompare(b.workflowId));
  if (sorted.length <= perRun) return sorted;
  const from = nextTurn % sorted.length;
  nextTurn = from + perRun;
  return [...sorted.slice(from), ...sorted].slice(0, perRun);
}

/** The reason the ended run carries (the UI and `temporal workflow describe` show it). */
export const endReason = (task: Pick<FailingTask, 'attempt' | 'failure'>): string =>
  (
    `netlease reconciler: the workflow task failed on every attempt (pending attempt ${task.attempt}): ` +
    `${task.failure}. Ended so the lease is started again with its sandboxes and addresses (pod running) ` +
    `or its addresses are collected (pod gone)`
  ).slice(0, 2000);

/** The runs a sweep found wedged: those it ended, or none and how many it held back. */
export interface WedgedOutcome {
  ended: EndedLease[];
  /** Wedged runs left alone because there were more than `maxEndedPerRun` (a bad deploy?). */
  heldBack: number;
}

/**
 * Which checked runs to end: those whose pending task reached `failedTaskAttempts`, unless there
 * are more than `maxEndedPerRun` of them (then none: a mass restart is an operator's decision).
 */
export function wedgedToEnd<T extends { task?: Pick<FailingTask, 'attempt'> }>(
  checked: T[],
  settings: Pick<WedgedLeases, 'failedTaskAttempts' | 'maxEndedPerRun'>,
): { end: T[]; heldBack: number } {
  const wedged = checked.filter((c) => (c.task?.attempt ?? 0) >= settings.failedTaskAttempts);
  return wedged.length > settings.maxEndedPerRun
    ? { end: [], heldBack: wedged.length }
    : { end: wedged, heldBack: 0 };
}

/**
 * Ends every checked lease run whose pending workflow task reached `failedTaskAttempts`. A run
 * that moved on meanwhile (another run, or closed) is left alone: the end names the run it read.
 */
export async function endWedgedLeases(
  client: Client,
  leases: KnownLease[],
  settings: WedgedLeases,
): Promise<WedgedOutcome> {
  const checked = leasesToCheck(leases, settings.checksPerRun);
  const tasks = await mapLimited(checked, DESCRIBES_AT_ONCE, (lease) =>
    failingWorkflowTask(client, lease.workflowId).catch(() => undefined),
  );
  const { end, heldBack } = wedgedToEnd(
    checked.map((lease, i) => ({ lease, task: tasks[i] })),
    settings,
  );
  const ended: EndedLease[] = [];
  for (const { lease, task } of end) {
    if (!task) continue;
    const handle = client.workflow.getHandle(lease.workflowId, task.runId);
    const done = await unlessGone(() => handle.terminate(endReason(task)).then(() => true), false);
    if (done) ended.push({ workflowId: lease.workflowId, podRef: lease.podRef, ...task });
  }
  return { ended, heldBack };
}
