// Signals to leases and nodes. Every signal is idempotent in its workflow; one to a workflow
// that has closed meanwhile has nothing left to do.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { nodeWorkflowId } from '../domain/ids';
import { podRunningSignal, releaseSignal } from '../workflows/lease-messages';
import { nodeDeletedSignal, nodeObservedSignal } from '../workflows/node-messages';

async function ignoringClosed(send: () => Promise<void>): Promise<boolean> {
  try {
    await send();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

export const signalRelease = (client: Client, leaseId: string, reason: string) =>
  ignoringClosed(() => client.workflow.getHandle(leaseId).signal(releaseSignal, { reason, nodeGone: false }));

export const signalPodRunning = (client: Client, leaseId: string) =>
  ignoringClosed(() => client.workflow.getHandle(leaseId).signal(podRunningSignal));

export const signalNodeObserved = (client: Client, nodeName: string, uid: string) =>
  ignoringClosed(() =>
    client.workflow.getHandle(nodeWorkflowId(nodeName)).signal(nodeObservedSignal, { uid }),
  );

export const signalNodeDeleted = (client: Client, nodeName: string, uid: string) =>
  ignoringClosed(() =>
    client.workflow.getHandle(nodeWorkflowId(nodeName)).signal(nodeDeletedSignal, { uid }),
  );
