// Until the server holds an update (admitted): the next workflow task carries it. Tests that put
// several messages into one workflow task send them while no worker runs, each once admitted.
import { temporal } from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import { waitForValue } from './wait';

export async function admitted(client: Client, workflowId: string, updateId: string): Promise<void> {
  const stage = () =>
    client.workflowService
      .pollWorkflowExecutionUpdate({
        namespace: client.options.namespace,
        updateRef: { workflowExecution: { workflowId }, updateId },
        waitPolicy: {
          lifecycleStage:
            temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage
              .UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED,
        },
      })
      .then(
        (response) => response.stage ?? 0,
        (err: unknown) => String(err), // not found until the server has it
      );
  await waitForValue(stage, (s) => typeof s === 'number' && s > 0, 15_000);
}
