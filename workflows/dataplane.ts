// Node-local steps of a lease. In IPAM mode the main plugin configures the interface, so there
// is nothing to do on the node; in ptp mode the node agent does it on its own task queue.
import { proxyActivities } from '@temporalio/workflow';
import type { AddressGrant } from '../domain/allocation';
import type { ActivationPolicy } from '../domain/config';
import {
  activationBudgetSeconds,
  DataplaneFailure,
  nodeTaskQueue,
  type AttachmentInput,
  type DataplaneActivities,
} from '../domain/dataplane';
import { leaseWorkflowId } from '../domain/ids';
import type { ActivatedLinks, Attachment, LeaseStart } from '../domain/lease';
import type { OfferAnswer } from '../domain/offer';
import { routesFor } from '../domain/routes';

/** An activity's summary in the UI: one line, bounded (a netns path can be 4 KiB). */
export const summary = (text: string): string => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** `198.18.0.5/26, fd00:18::5/120`: what a step configures or gives back. */
export const addressList = (addresses: AddressGrant[]): string =>
  addresses.map((a) => `${a.address}/${a.prefixLength}`).join(', ');

const input = (start: LeaseStart, attachment: Attachment, addresses: AddressGrant[]): AttachmentInput => ({
  leaseId: leaseWorkflowId(start.podUid, start.ifName),
  start,
  attachment: { containerId: attachment.containerId, netns: attachment.netns, ifName: attachment.ifName },
  addresses,
  routes: routesFor(addresses, attachment.routes),
});

const ACTIVATION_HEARTBEAT_SECONDS = 15;

/**
 * One activation with its whole retry budget. Schedule-to-close bounds it, so a dead node parks
 * the lease instead of holding it; the `retry` signal starts a fresh budget.
 */
export async function activateOnNode(
  start: LeaseStart,
  attachment: Attachment,
  addresses: AddressGrant[],
  policy: ActivationPolicy | undefined,
): Promise<ActivatedLinks | undefined> {
  if (start.mode === 'ipam' || !policy) return undefined;
  const { activateAttachment } = proxyActivities<DataplaneActivities>({
    taskQueue: nodeTaskQueue(start.nodeName),
    startToCloseTimeout: `${policy.attemptTimeoutSeconds} seconds`,
    // The attempt beats per step: a dead agent costs this, not the attempt timeout (the soak saw
    // a lease hold a deleted pod's addresses for 60 s behind an agent killed mid-activation).
    heartbeatTimeout: `${Math.min(policy.attemptTimeoutSeconds, ACTIVATION_HEARTBEAT_SECONDS)} seconds`,
    scheduleToCloseTimeout: `${activationBudgetSeconds(policy)} seconds`,
    retry: {
      initialInterval: `${policy.initialIntervalSeconds} seconds`,
      maximumInterval: `${policy.maximumIntervalSeconds} seconds`,
      backoffCoefficient: 2,
      maximumAttempts: policy.maximumAttempts,
      nonRetryableErrorTypes: [DataplaneFailure.invalidInput],
    },
  });
  return activateAttachment.executeWithOptions(
    {
      summary: summary(
        `activate: ${attachment.ifName} with ${addressList(addresses)} in ${attachment.netns || 'the runtime'}`,
      ),
    },
    [input(start, attachment, addresses)],
  );
}

/**
 * Clean-up on the node (deactivate, revoke an offer) retries for an hour, then gives up: the lease
 * records the error and goes on (a node gone for that long is compensated).
 */
const cleanUpOn = (nodeName: string) =>
  proxyActivities<DataplaneActivities>({
    taskQueue: nodeTaskQueue(nodeName),
    startToCloseTimeout: '60 seconds',
    scheduleToCloseTimeout: '1 hour',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  });

export async function deactivateOnNode(start: LeaseStart, attachment: Attachment, addresses: AddressGrant[]) {
  if (start.mode === 'ipam' || attachment.status === 'pending') return;
  const { deactivateAttachment } = cleanUpOn(start.nodeName);
  await deactivateAttachment.executeWithOptions(
    { summary: summary(`deactivate: remove ${attachment.ifName} of ${attachment.containerId.slice(0, 12)}`) },
    [input(start, attachment, addresses)],
  );
}

/** Ends the node agent's offer (domain/offer); an ADD it answered from it comes back. */
export async function revokeOfferOnNode(
  start: LeaseStart,
  leaseId: string,
  run: string,
): Promise<OfferAnswer | null> {
  const { revokeOffer } = cleanUpOn(start.nodeName);
  return revokeOffer.executeWithOptions(
    { summary: summary(`revoke: end the node agent's offer of the reservation`) },
    [{ leaseId, run }],
  );
}
