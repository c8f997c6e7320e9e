// Workflow state machines in isolation: the real workflow bundle on the shared test server, with
// activities replaced by test doubles. (The SDK's time-skipping server is a separate download
// this machine cannot fetch, so durations in these tests are configured short instead.)
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { LeaseStart } from '../../domain/lease';
import { prebuiltBundle } from '../../worker/control/bundle';
import { failpointSinks } from '../../worker/control/failpoint-sinks';
import { quietRuntime, temporalAddress, uniqueName } from './temporal';

export interface WorkflowTestEnv {
  env: TestWorkflowEnvironment;
  taskQueue: string;
  /** Runs a worker with these activities (on `taskQueue`, or another queue) until teardown. */
  worker(activities: object, taskQueue?: string): Promise<void>;
  close(): Promise<void>;
}

export async function workflowTestEnv(prefix: string): Promise<WorkflowTestEnv> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: temporalAddress() });
  const taskQueue = uniqueName(`tq-${prefix}`);
  const running: Array<{ worker: Worker; done: Promise<void> }> = [];
  return {
    env,
    taskQueue,
    async worker(activities, queue = taskQueue) {
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue: queue,
        workflowBundle: queue === taskQueue ? prebuiltBundle() : undefined,
        activities,
        sinks: failpointSinks(),
      });
      running.push({ worker, done: worker.run() });
    },
    async close() {
      for (const { worker } of running) worker.shutdown();
      await Promise.all(running.map((r) => r.done));
      await env.teardown();
    },
  };
}

/** A promise the test settles by hand: an activity that waits for the test's word. */
export function gate<T = void>() {
  let open: (value: T) => void = () => undefined;
  const opened = new Promise<T>((resolve) => (open = resolve));
  return { opened, open };
}

/** The failure type a refused update carries (FailureType), or the error's text when it is not one. */
export const updateFailureType = (err: unknown): string | null | undefined =>
  err instanceof WorkflowUpdateFailedError
    ? (err.cause as ApplicationFailure | undefined)?.type
    : String(err);

/** A lease's start for a workflow test: a fresh pod UID (`prefix`), pod ns/p, eth0, pool p. */
export const testLeaseStart = (
  prefix: string,
  nodeName: string,
  mode: LeaseStart['mode'],
  more: Partial<LeaseStart> = {},
): LeaseStart => ({
  podUid: uniqueName(prefix),
  podNamespace: 'ns',
  podName: 'p',
  ifName: 'eth0',
  nodeName,
  pool: 'p',
  mode,
  ...more,
});
