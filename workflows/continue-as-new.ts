// When to continue-as-new: the server suggests it, or history passed the configured limit.
import { allHandlersFinished, condition, workflowInfo } from '@temporalio/workflow';

export const historyTooLong = (limit: number): boolean =>
  workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= limit;

/** Waits until history is long enough and every update/signal handler has finished. */
export async function untilTimeToContinue(limit: number, stop: () => boolean = () => false): Promise<void> {
  await condition(() => historyTooLong(limit) || stop());
  await condition(allHandlersFinished);
}
