// "The workflow is gone": it never started, or it closed. One rule for every caller.
//
// How Temporal says so (SDK 1.24; checked in test/workflow/workflow-gone): a signal, an update or a
// describe of an id with no run, or whose run has closed, fails with gRPC NOT_FOUND ("workflow
// execution already completed"), thrown as WorkflowNotFoundError. (A handle without a run id
// follows the id to its latest run, so a workflow that continued as new is not gone.)
// A WorkflowUpdateFailedError is never "gone": the run refused the update (its validator or handler
// threw), or closed while it held the update accepted (cause type AcceptedUpdateCompletedWorkflow;
// that run did not take it, and a continued-as-new one lives on).
// A query of a closed workflow still answers (a worker replays it), so a failed query tells
// nothing: ask `workflowIsGone`.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';

/** Whether a call failed because its workflow is gone (never started, or closed). */
export function isGoneError(err: unknown): err is WorkflowNotFoundError {
  return err instanceof WorkflowNotFoundError;
}

/** An update the workflow's run did not take: refused by it, or outlived by it (see above). */
export function isUpdateRefusal(err: unknown): err is WorkflowUpdateFailedError {
  return err instanceof WorkflowUpdateFailedError;
}

/** An update its run held accepted and then closed without taking (terminated, reset): a next run may take it. */
export function isOutlivedUpdate(err: unknown): err is WorkflowUpdateFailedError {
  return (
    isUpdateRefusal(err) &&
    (err.cause as { type?: string } | undefined)?.type === 'AcceptedUpdateCompletedWorkflow'
  );
}

/** `call`'s value, or `whenGone` when its workflow is gone; any other failure is thrown. */
export async function unlessGone<T, G>(call: () => Promise<T>, whenGone: G): Promise<T | G> {
  try {
    return await call();
  } catch (err) {
    if (isGoneError(err)) return whenGone;
    throw err;
  }
}

/** Whether the workflow is gone now: no run of this id, or its latest run has closed. */
export async function workflowIsGone(client: Client, workflowId: string): Promise<boolean> {
  return unlessGone(
    async () => (await client.workflow.getHandle(workflowId).describe()).status.name !== 'RUNNING',
    true,
  );
}
