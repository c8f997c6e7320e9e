// Node-local steps of a lease. In IPAM mode the main plugin configures the interface, so there
// is nothing to do on the node; in ptp mode the node agent does it on its own task queue.
import { proxyActivities } from '@temporalio/workflow';
import type { AddressGrant } from '../domain/allocation';
import type { ActivationPolicy } from '../domain/config';
import { nodeTaskQueue, type DataplaneActivities } from '../domain/dataplane';
import { leaseWorkflowId } from '../domain/ids';
import type { Attachment, LeaseStart } from '../domain/lease';

const input = (start: LeaseStart, attachment: Attachment, addresses: AddressGrant[]) => ({
  leaseId: leaseWorkflowId(start.podUid, start.ifName),
  start,
  attachment: { containerId: attachment.containerId, netns: attachment.netns, ifName: attachment.ifName },
  addresses,
});

export async function activateOnNode(
  start: LeaseStart,
  attachment: Attachment,
  addresses: AddressGrant[],
  policy: ActivationPolicy | undefined,
): Promise<void> {
  if (start.mode === 'ipam' || !policy) return;
  const { activateAttachment } = proxyActivities<DataplaneActivities>({
    taskQueue: nodeTaskQueue(start.nodeName),
    scheduleToStartTimeout: `${policy.attemptTimeoutSeconds} seconds`,
    startToCloseTimeout: `${policy.attemptTimeoutSeconds} seconds`,
    retry: {
      initialInterval: `${policy.initialIntervalSeconds} seconds`,
      maximumInterval: `${policy.maximumIntervalSeconds} seconds`,
      backoffCoefficient: 2,
      maximumAttempts: policy.maximumAttempts,
    },
  });
  await activateAttachment.executeWithOptions(
    {
      startToCloseTimeout: `${policy.attemptTimeoutSeconds} seconds`,
      summary: `activate ${attachment.ifName} in ${attachment.netns}`,
    },
    [input(start, attachment, addresses)],
  );
}

/** Deactivation must not give up: a dead node is handled by release with nodeGone instead. */
export async function deactivateOnNode(start: LeaseStart, attachment: Attachment, addresses: AddressGrant[]) {
  if (start.mode === 'ipam' || attachment.status === 'pending') return;
  const { deactivateAttachment } = proxyActivities<DataplaneActivities>({
    taskQueue: nodeTaskQueue(start.nodeName),
    startToCloseTimeout: '60 seconds',
    scheduleToCloseTimeout: '1 hour',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  });
  await deactivateAttachment.executeWithOptions(
    {
      startToCloseTimeout: '60 seconds',
      scheduleToCloseTimeout: '1 hour',
      summary: `deactivate ${attachment.ifName}`,
    },
    [input(start, attachment, addresses)],
  );
}
