// Replays every workflow a test file ran (found by its task queue) against the current bundle.
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { prebuiltBundle } from '../../worker/control/bundle';
import { quietRuntime, type TestTemporal } from './temporal';

export async function replayTaskQueue(
  client: Client,
  taskQueue: string,
): Promise<{ replayed: number; errors: string[] }> {
  quietRuntime();
  const histories = [];
  for await (const execution of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    histories.push({ workflowId: execution.workflowId, history });
  }
  const errors: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: prebuiltBundle() }, histories)) {
    replayed++;
    if (result.error) errors.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { replayed, errors };
}

/**
 * Replays this file's histories and fails unless at least `atLeast` were replayed (visibility that
 * returns nothing must not pass) and none diverged.
 */
export async function expectReplayed(
  temporal: Pick<TestTemporal, 'client' | 'taskQueue'>,
  atLeast: number,
): Promise<number> {
  const { replayed, errors } = await replayTaskQueue(temporal.client, temporal.taskQueue);
  expect(errors).toEqual([]);
  expect(replayed).toBeGreaterThanOrEqual(atLeast);
  return replayed;
}
