// Every history the run made, read once at the end: replayed against the current bundle, and
// searched for workflow tasks that failed by the workflow's own doing (a handler that threw, a
// nondeterminism, a bad command). Such a task fails on every attempt and stops the workflow
// without closing it: no completed task follows it. One that a later task completed was transient
// (a worker SIGSTOPped mid-task passes the sandbox's 5-s deadline when it wakes): counted apart.
import type { Client } from '@temporalio/client';
import * as proto from '@temporalio/proto';
import { replayAll } from '../harness/replay';

type History = proto.temporal.api.history.v1.IHistory;

const Cause = proto.temporal.api.enums.v1.WorkflowTaskFailedCause;
/** Failures the server or SDK make in the normal course (a retried task, a reset, an update race). */
const BENIGN = new Set<number>([
  Cause.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_FAILOVER_CLOSE_COMMAND,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_UPDATE,
]);

export interface FailedTasks {
  /** Failed, and no task completed after: the workflow is stopped. */
  stuck: string[];
  /** Failed once, then a task completed. */
  recovered: string[];
}

/** The workflow tasks of `history` that failed by the workflow's doing (at or after `since`, ms). */
export function failedTasks(history: History, since = 0): FailedTasks {
  const found: FailedTasks = { stuck: [], recovered: [] };
  let pending: string[] = [];
  for (const event of history.events ?? []) {
    if (event.workflowTaskCompletedEventAttributes) {
      found.recovered.push(...pending);
      pending = [];
    }
    const failed = event.workflowTaskFailedEventAttributes;
    if (!failed) continue;
    const cause = Number(failed.cause ?? 0);
    const at = Number(event.eventTime?.seconds ?? 0) * 1000;
    if (BENIGN.has(cause) || at < since) continue;
    pending.push(
      `event ${String(event.eventId)}: ${Cause[cause] ?? cause}: ${failed.failure?.message ?? ''}`,
    );
  }
  found.stuck.push(...pending);
  return found;
}

/**
 * A replay that fails only because the SDK's core orders an update before an activity's result
 * that the live worker ran first: after a workflow task timed out (its worker killed or stopped),
 * the next attempt's worker runs the two in two activations, a replay of the whole history in one
 * (sdk-core `prepare_to_ship_activation` sorts updates first). Same code, same history, two
 * orders: the SDK's, not the workflow's (docs/testing.md, "The soak"; temporalio/sdk-rust#943).
 * Its other face: an update completed in the same task as the next one's acceptance, which core's
 * update machine then refuses on replay ("UpdateMachine in state CompletedImmediatelyCompleteCreated").
 */
export const SDK_UPDATE_ORDER =
  /Nondeterminism error: Update machine does not handle this event|Fatal error in workflow machines: UpdateMachine in state \w+ says the transition is invalid/;

export interface HistoryReport {
  replayed: number;
  replayErrors: string[];
  /** Replays that failed only by SDK_UPDATE_ORDER, counted apart. */
  sdkUpdateOrder: string[];
  /** `workflowId@runId: what failed`, one per task, stuck or recovered. */
  failedTasks: FailedTasks;
}

export async function checkHistories(client: Client, taskQueue: string): Promise<HistoryReport> {
  const histories = [];
  const failed: FailedTasks = { stuck: [], recovered: [] };
  for await (const execution of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    histories.push({ workflowId: execution.workflowId, history });
    const run = `${execution.workflowId}@${execution.runId}`;
    const { stuck, recovered } = failedTasks(history);
    // A run closed since (terminated by the operator, reset) is not stopped by it.
    const stopped = execution.status.name === 'RUNNING' ? failed.stuck : failed.recovered;
    stopped.push(...stuck.map((task) => `${run}: ${task}`));
    failed.recovered.push(...recovered.map((task) => `${run}: ${task}`));
  }
  const { replayed, errors } = await replayAll(histories);
  return {
    replayed,
    replayErrors: errors.filter((e) => !SDK_UPDATE_ORDER.test(e)),
    sdkUpdateOrder: errors.filter((e) => SDK_UPDATE_ORDER.test(e)),
    failedTasks: failed,
  };
}
