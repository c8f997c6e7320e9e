// Signals to leases and nodes. Every signal is idempotent in its workflow; one to a workflow
// that has closed meanwhile has nothing left to do.
import type { Client } from '@temporalio/client';
import type { NodeDecision, PodDecision } from '../domain/cluster-decisions';
import { nodeWorkflowId } from '../domain/ids';
import { podRunningSignal, releaseSignal, retrySignal } from '../workflows/lease-messages';
import { nodeDeletedSignal, nodeObservedSignal } from '../workflows/node-messages';
import { unlessGone } from './workflow-gone';

/** Whether the signal was sent: false when its workflow is gone. */
const ignoringClosed = (send: () => Promise<void>): Promise<boolean> =>
  unlessGone(async () => (await send(), true), false);

/** With `runId`, only that run is released (false when it has closed, even if a newer one runs). */
export const signalRelease = (client: Client, leaseId: string, reason: string, runId?: string) =>
  ignoringClosed(() =>
    client.workflow.getHandle(leaseId, runId).signal(releaseSignal, { reason, nodeGone: false }),
  );

export const signalPodRunning = (client: Client, leaseId: string, runId?: string) =>
  ignoringClosed(() => client.workflow.getHandle(leaseId, runId).signal(podRunningSignal));

export const signalNodeObserved = (client: Client, nodeName: string, uid: string) =>
  ignoringClosed(() =>
    client.workflow.getHandle(nodeWorkflowId(nodeName)).signal(nodeObservedSignal, { uid }),
  );

export const signalNodeDeleted = (client: Client, nodeName: string, uid: string) =>
  ignoringClosed(() =>
    client.workflow.getHandle(nodeWorkflowId(nodeName)).signal(nodeDeletedSignal, { uid }),
  );

/**
 * Carries out a pod decision on one lease; returns what it did ('kept' when nothing). `source`
 * (watcher, reconciler) prefixes the release reason, so the lease says who released it. With
 * `runId`, only the run the decision was made on hears it.
 */
export async function applyPodDecision(
  client: Client,
  leaseId: string,
  decision: PodDecision,
  source: string,
  runId?: string,
): Promise<'released' | 'confirmedRunning' | 'kept'> {
  if (decision.action === 'release') {
    const sent = await signalRelease(client, leaseId, `${source}: ${decision.reason}`, runId);
    return sent ? 'released' : 'kept';
  }
  if (decision.action === 'confirmRunning')
    return (await signalPodRunning(client, leaseId, runId)) ? 'confirmedRunning' : 'kept';
  return 'kept';
}

/** Carries out a node decision; returns what it did. */
export async function applyNodeDecision(
  client: Client,
  nodeName: string,
  decision: NodeDecision,
): Promise<{ deleted: boolean; observed: boolean }> {
  const deleted = decision.deleted ? await signalNodeDeleted(client, nodeName, decision.deleted) : false;
  const observed = decision.observed ? await signalNodeObserved(client, nodeName, decision.observed) : false;
  return { deleted, observed };
}

/** Runs a parked activation again (the lease ignores it when nothing is parked). */
export const signalRetry = (client: Client, leaseId: string) =>
  ignoringClosed(() => client.workflow.getHandle(leaseId).signal(retrySignal));
