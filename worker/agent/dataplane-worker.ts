// The node agent: a worker on `netlease-node-<node>` running the dataplane activities, no workflows.
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
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

/**
 * How the agent polls its queue: one long poll. A node's dataplane tasks are few (a cold ptp
 * activation or a deactivation per pod), and the server admits a bounded number of concurrent
 * long polls per namespace and frontend (`frontend.namespaceCount`, 1,200 by default): with the
 * SDK's default of up to 10 activity polls per worker, about 120 nodes reached it, and the
 * refused polls left activations waiting (found by the scale simulation, docs/benchmarks.md, "Scale").
 */
export const NODE_AGENT_POLLING = {
  activityTaskPollerBehavior: { type: 'simple-maximum', maximum: 1 },
} satisfies Partial<WorkerOptions>;

/** The worker on `given` (its owner closes it), or on a connection made here and closed by `close`. */
export async function createNodeAgent(
  config: NodeAgentConfig,
  activities: DataplaneActivities,
  given?: NativeConnection,
): Promise<NodeAgent> {
  const nodeName = config.nodeName ?? hostNodeName();
  const connection = given ?? (await connectWorkerConnection(config.temporal));
  const taskQueue = nodeTaskQueue(nodeName);
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    activities,
    ...NODE_AGENT_POLLING,
    shutdownGraceTime: '10 seconds',
  });
  const close = async () => {
    if (!given) await connection.close();
  };
  return { worker, nodeName, taskQueue, close };
}
