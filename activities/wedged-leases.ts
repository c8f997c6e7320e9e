// Leases that do not move (docs/operating.md): a workflow task that fails on every attempt (a
// history the worker cannot run, such as the SDK's update order, docs/testing.md "The soak") leaves
// the lease's signals and updates unprocessed for good, and only a terminate ended it. The sweep
// ends such a run itself. The lease is then a closed lease whose addresses its node's table still
// holds (terminating a run leaves the table alone: nothing is handed out meanwhile), which the
// sweep's leak collection starts again with its sandboxes (pod running) or collects (pod gone).
import type { Client } from '@temporalio/client';
import type { WedgedLeases } from '../domain/config';
import { mapLimited } from '../domain/map-limited';
import { nodeWorkflowId } from '../domain/ids';
import type { KnownLease, KnownNode } from '../temporal/visibility';
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
 * Ends each of `runs` whose pending workflow task reached `failedTaskAttempts` (its workflow by
 * `workflowIdOf`), with `reasonOf`'s reason. A run that moved on meanwhile (another run, or
 * closed) is left alone: the end names the run it read.
 */
async function endWedged<T>(
  client: Client,
  runs: T[],
  workflowIdOf: (run: T) => string,
  reasonOf: (task: FailingTask) => string,
  settings: WedgedLeases,
): Promise<{ ended: Array<{ run: T; task: FailingTask }>; heldBack: number }> {
  const tasks = await mapLimited(runs, DESCRIBES_AT_ONCE, (run) =>
    failingWorkflowTask(client, workflowIdOf(run)).catch(() => undefined),
  );
  const { end, heldBack } = wedgedToEnd(
    runs.map((run, i) => ({ run, task: tasks[i] })),
    settings,
  );
  const ended: Array<{ run: T; task: FailingTask }> = [];
  for (const { run, task } of end) {
    if (!task) continue;
    const handle = client.workflow.getHandle(workflowIdOf(run), task.runId);
    const done = await unlessGone(() => handle.terminate(reasonOf(task)).then(() => true), false);
    if (done) ended.push({ run, task });
  }
  return { ended, heldBack };
}

/** Ends every checked lease run whose pending workflow task reached `failedTaskAttempts`. */
export async function endWedgedLeases(
  client: Client,
  leases: KnownLease[],
  settings: WedgedLeases,
): Promise<WedgedOutcome> {
  const checked = leasesToCheck(leases, settings.checksPerRun);
  const { ended, heldBack } = await endWedged(client, checked, (l) => l.workflowId, endReason, settings);
  return {
    ended: ended.map(({ run, task }) => ({ workflowId: run.workflowId, podRef: run.podRef, ...task })),
    heldBack,
  };
}

/** A node run the sweep ended (its task failed on every attempt, as a lease's may). */
export interface EndedNode {
  name: string;
  runId: string;
  attempt: number;
  failure: string;
}

const nodeEndReason = (task: Pick<FailingTask, 'attempt' | 'failure'>): string =>
  (
    `netlease reconciler: the workflow task failed on every attempt (pending attempt ${task.attempt}): ` +
    `${task.failure}. Ended so that the node's next allocation starts it again, rebuilding its table ` +
    'from the leases and the pool'
  ).slice(0, 2000);

/**
 * As the leases: a node workflow whose pending task reached `failedTaskAttempts` (the soak: the
 * SDK's update order after a timed-out task, once its worker replayed it) answers no ADD of its
 * node. Ended, the next allocation starts it again and the new run rebuilds its table (the
 * operator's remedy, docs/operating.md). The same `maxEndedPerRun` holds back a mass end.
 */
export async function endWedgedNodes(
  client: Client,
  nodes: KnownNode[],
  settings: WedgedLeases,
): Promise<EndedNode[]> {
  const { ended } = await endWedged(client, nodes, (n) => nodeWorkflowId(n.name), nodeEndReason, settings);
  return ended.map(({ run, task }) => ({ name: run.name, ...task }));
}
