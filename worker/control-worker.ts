// The control worker: lease, node and pool workflows plus the cluster-side activities.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createControlActivities } from '../activities/control';
import type { NetleaseConfig } from '../domain/config';
import { prebuiltBundle } from './bundle';

export interface ControlWorker {
  worker: Worker;
  run(): Promise<void>;
  close(): Promise<void>;
}

export async function createControlWorker(config: NetleaseConfig): Promise<ControlWorker> {
  const { address, namespace, taskQueue } = config.temporal;
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue,
    workflowBundle: prebuiltBundle(),
    activities: createControlActivities({ client, config }),
    // Temporal's own handling of SIGINT/SIGTERM: stop polling, finish in-flight tasks, then resolve run().
    shutdownGraceTime: '10 seconds',
  });
  return {
    worker,
    run: () => worker.run(),
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}
