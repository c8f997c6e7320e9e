// CNI STATUS: netlease can take ADDs when Temporal answers and, in ptp mode, when this node's
// agent is polling its task queue.
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { nodeTaskQueue } from '../domain/dataplane';

/**
 * A live agent re-polls at least once a minute (a long poll ends after about 60 s), so a poller
 * not seen for longer than this is gone.
 */
export const AGENT_SILENT_AFTER_SECONDS = 90;

const GRPC_NOT_FOUND = 5;

/** The node agent's pollers seen within AGENT_SILENT_AFTER_SECONDS, by identity. */
export async function liveNodeAgents(client: Client, namespace: string, nodeName: string): Promise<string[]> {
  const response = await client.workflowService
    .describeTaskQueue({
      namespace,
      taskQueue: {
        name: nodeTaskQueue(nodeName),
        kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL,
      },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    })
    .catch((err: unknown) => {
      // A task queue is never "not found": the namespace is (the raw service call says it as gRPC NOT_FOUND).
      throw isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND
        ? new NamespaceNotFoundError(namespace)
        : err;
    });
  const since = Date.now() / 1000 - AGENT_SILENT_AFTER_SECONDS;
  return (response.pollers ?? [])
    .filter((poller) => Number(poller.lastAccessTime?.seconds ?? 0) >= since)
    .map((poller) => poller.identity ?? '');
}
