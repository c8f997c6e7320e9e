// A node or pool workflow that ran and closed (terminated, failed, timed out) holds the only
// record of its addresses or blocks: nothing starts it again as if nothing had been. The control
// worker starts it on purpose, naming the run it follows, and the new run rebuilds its table
// before it answers (workflows/node/rebuild, workflows/pool).
import {
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { unlessGone } from './workflow-gone';

type StartOptions = Omit<WorkflowStartOptions, 'workflowId'>;

/**
 * Starts `workflowId` again when its latest run is closed; `options(why, closedRunId)` are its
 * start options, `why` naming the closed run. Returns how that run closed ('RUNNING' when one
 * runs: nothing done; undefined when it never ran).
 */
export async function startAgain(
  client: Client,
  workflowId: string,
  workflowType: string,
  options: (why: string, closedRunId: string) => StartOptions | Promise<StartOptions>,
): Promise<string | undefined> {
  const previous = await unlessGone(() => client.workflow.getHandle(workflowId).describe(), undefined);
  if (!previous || previous.status.name === 'RUNNING') return previous?.status.name;
  const why = `run ${previous.runId} ${previous.status.name}`;
  await client.workflow
    .start(workflowType, {
      ...(await options(why, previous.runId)),
      workflowId,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    } as WorkflowStartOptions)
    .catch((err: unknown) => {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    });
  return previous.status.name;
}
