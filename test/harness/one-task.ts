// Several messages carried by one workflow task: the control worker that ran the workflow so far
// is cut off without telling the server (a proxy stops forwarding), its sticky task times out
// quickly, the test sends the messages meanwhile, and the next worker gets one task holding them.
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { prebuiltBundle } from '../../worker/control/bundle';
import { tcpProxy } from './tcp-proxy';
import { temporalAddress } from './temporal';
import { admitted } from './update-stage';
import { waitForValue } from './wait';

export interface HeldTask {
  /** The first worker is gone: what is sent from now on waits for the next one. */
  cut(): Promise<void>;
  /** Until an update sent while cut is admitted (it then rides in the next task). */
  admitted(workflowId: string, updateId: string): Promise<void>;
  /** The next worker takes the task, once the first one's sticky task has timed out. */
  next(workflowId: string): Promise<void>;
  close(): Promise<void>;
}

/** `env`: the client the test sends with, and the connection the next worker polls on. */
export async function heldTask(
  env: { client: Client; nativeConnection: NativeConnection },
  taskQueue: string,
  activities: object,
): Promise<HeldTask> {
  const { client } = env;
  const proxy = await tcpProxy(temporalAddress());
  const connection = await NativeConnection.connect({ address: proxy.address });
  const gone = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: prebuiltBundle(),
    activities,
    stickyQueueScheduleToStartTimeout: '1 second',
  });
  const goneRun = gone.run();
  let next: { worker: Worker; run: Promise<void> } | undefined;
  return {
    cut: () => proxy.cut(),
    admitted: (workflowId, updateId) => admitted(client, workflowId, updateId),
    async next(workflowId) {
      const timedOut = async () =>
        ((await client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).filter(
          (e) => e.workflowTaskTimedOutEventAttributes,
        );
      await waitForValue(timedOut, (events) => events.length >= 1, 15_000);
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: prebuiltBundle(),
        activities,
      });
      next = { worker, run: worker.run() };
    },
    async close() {
      await proxy.restore();
      gone.shutdown();
      await goneRun;
      await connection.close();
      await proxy.close();
      next?.worker.shutdown();
      await next?.run;
    },
  };
}
