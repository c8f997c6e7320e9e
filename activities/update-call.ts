// Workflow-to-workflow request/response: an activity calls the other workflow's update. A failed
// update keeps its failure type so the calling workflow can decide whether to retry.
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';

export async function callUpdate<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const cause = err.cause;
      throw cause.nonRetryable
        ? ApplicationFailure.nonRetryable(cause.message, cause.type)
        : ApplicationFailure.retryable(cause.message, cause.type);
    }
    throw err;
  }
}
