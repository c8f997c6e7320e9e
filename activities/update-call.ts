// Workflow-to-workflow request/response: an activity calls the other workflow's update. A failed
// update keeps its failure type so the calling workflow can decide whether to retry.
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { isOutlivedUpdate } from '../temporal/workflow-gone';

/** The called run closed while it held the update accepted (an operator's terminate): not taken. */
export const UPDATE_OUTLIVED = 'UpdateOutlived';

export async function callUpdate<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    // The SDK says non-retryable, but the update was never taken: the next attempt reaches the
    // workflow's next run, or finds it gone (the 10,000-lifecycle soak failed two releases so).
    if (isOutlivedUpdate(err))
      throw ApplicationFailure.retryable(
        `the called run closed before taking the update: ${err.message}`,
        UPDATE_OUTLIVED,
      );
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const cause = err.cause;
      throw cause.nonRetryable
        ? ApplicationFailure.nonRetryable(cause.message, cause.type)
        : ApplicationFailure.retryable(cause.message, cause.type);
    }
    throw err;
  }
}
