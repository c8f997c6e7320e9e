// The node agent: a worker on `netlease-node-<node>` running the dataplane activities, no workflows.
import { Worker } from '@temporalio/worker';
import type { NodeAgentConfig } from '../../domain/config';
import { nodeTaskQueue, type DataplaneActivities } from '../../domain/dataplane';
import { hostNodeName } from '../../kubernetes/node-name';
import { connectWorkerConnection } from '../../temporal/connection';

export interface NodeAgent {
  worker: Worker;
  nodeName: string;
  taskQueue: string;
  close(): Promise<void>;
}

export async function createNodeAgent(
  config: NodeAgentConfig,
  activities: DataplaneActivities,
): Promise<NodeAgent> {
  const nodeName = config.nodeName ?? hostNodeName();
  const connection = await connectWorkerConnection(config.temporal);
  const taskQueue = nodeTaskQueue(nodeName);
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    activities,
    shutdownGraceTime: '10 seconds',
  });
  return { worker, nodeName, taskQueue, close: () => connection.close() };
}
