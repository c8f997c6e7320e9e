// Simulated node agents: one in-process Temporal worker per node's task queue, answering the
// dataplane activities as the real agent (worker/agent/dataplane-worker) answers them on success,
// without kernel work: activation returns the links the real one derives from the attachment,
// deactivation returns nothing, and revokeOffer is the real one of an agent that holds no offers.
// The real agent's polling (one long poll) and a few slots each, on a handful of shared
// connections, so a thousand fit under the server's limit of concurrent polls per namespace.
import { NativeConnection, Worker } from '@temporalio/worker';
import { offerActivities } from '../../activities/dataplane';
import { nodeTaskQueue, type AttachmentInput, type DataplaneActivities } from '../../domain/dataplane';
import type { ActivatedLinks } from '../../domain/lease';
import { attachmentLinkNames } from '../../kernel/names';
import { quietRuntime } from '../harness/temporal';
import { NODE_AGENT_POLLING } from '../../worker/agent/dataplane-worker';

/** Workers per gRPC connection (each long-poll is one HTTP/2 stream). */
const WORKERS_PER_CONNECTION = 100;

export interface SimulatedAgents {
  /** Activations and deactivations answered. */
  readonly answered: { activate: number; deactivate: number };
  stop(): Promise<void>;
}

function simulatedActivities(answered: SimulatedAgents['answered']): DataplaneActivities {
  return {
    async activateAttachment({ attachment }: AttachmentInput): Promise<ActivatedLinks> {
      const names = attachmentLinkNames(attachment.containerId, attachment.ifName);
      answered.activate++;
      return {
        host: { name: names.hostName, mac: names.hostMac },
        container: { name: attachment.ifName, mac: names.containerMac, sandbox: attachment.netns },
      };
    },
    async deactivateAttachment(): Promise<void> {
      answered.deactivate++;
    },
    ...offerActivities(undefined),
  };
}

export async function startSimulatedAgents(address: string, nodeNames: string[]): Promise<SimulatedAgents> {
  quietRuntime();
  const answered = { activate: 0, deactivate: 0 };
  const activities = simulatedActivities(answered);
  const connections: NativeConnection[] = [];
  const workers: Worker[] = [];
  for (const [i, nodeName] of nodeNames.entries()) {
    if (i % WORKERS_PER_CONNECTION === 0) connections.push(await NativeConnection.connect({ address }));
    workers.push(
      await Worker.create({
        connection: connections[connections.length - 1] as NativeConnection,
        taskQueue: nodeTaskQueue(nodeName),
        activities,
        maxConcurrentActivityTaskExecutions: 4,
        ...NODE_AGENT_POLLING,
        shutdownGraceTime: '2 seconds',
      }),
    );
  }
  const running = workers.map((w) => w.run());
  return {
    answered,
    async stop() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.allSettled(running);
      for (const connection of connections) await connection.close();
    },
  };
}
