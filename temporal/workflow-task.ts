// A workflow whose workflow task keeps failing does not move: signals and updates wait, its
// phase stays put, and visibility still lists it as Running. Describe and history say so.
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

export interface FailingTask {
  /** The run whose task fails. */
  runId: string;
  /** The pending workflow task's attempt: 2 or more means it failed (or timed out) before. */
  attempt: number;
  /** The last WorkflowTaskFailed (or TimedOut) event's cause, as the worker reported it. */
  failure: string;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The workflow task's repeated failure, or undefined when its task is not failing. */
export async function failingWorkflowTask(
  client: Client,
  workflowId: string,
  runId?: string,
): Promise<FailingTask | undefined> {
  const description = await client.workflow.getHandle(workflowId, runId).describe();
  const attempt = description.raw.pendingWorkflowTask?.attempt ?? 0;
  if (attempt < 2) return undefined;
  const run = description.runId;
  return { runId: run, attempt, failure: await lastTaskFailure(client, workflowId, run) };
}

/** The newest workflow task failure in the history, read from its end. */
async function lastTaskFailure(client: Client, workflowId: string, runId: string): Promise<string> {
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 100,
  });
  const event = (history?.events ?? []).find(
    (e: HistoryEvent) => e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes,
  );
  if (event?.workflowTaskTimedOutEventAttributes) return 'the workflow task timed out';
  const failure = event?.workflowTaskFailedEventAttributes?.failure;
  return failure?.message || 'no failure recorded in the last 100 events';
}

/** What an operator does about it (docs/operating.md: "A lease that does not move"). */
export const FAILING_TASK_REMEDY =
  'fix the cause (a worker that cannot run this workflow: deploy one that can), or reset the run to ' +
  'its last good workflow task: temporal workflow reset --workflow-id <id> --type LastWorkflowTask ' +
  '--reason <why> (docs/operating.md: "A lease that does not move")';
