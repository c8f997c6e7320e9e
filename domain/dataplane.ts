// The seam between lease workflows and the node agent: what activation and deactivation get.
import type { AddressGrant } from './allocation';
import type { ActivationPolicy } from './config';
import type { ActivatedLinks, Attachment, LeaseStart } from './lease';
import type { OfferAnswer, OfferRevocation } from './offer';
import type { Route } from './routes';

export const nodeTaskQueue = (nodeName: string): string => `netlease-node-${nodeName}`;

export interface AttachmentInput {
  leaseId: string;
  start: LeaseStart;
  attachment: Pick<Attachment, 'containerId' | 'netns' | 'ifName'>;
  addresses: AddressGrant[];
  routes: Route[];
}

/** Node-local steps, run by the node agent on `netlease-node-<node>`. Both are idempotent. */
export interface DataplaneActivities {
  activateAttachment(input: AttachmentInput): Promise<ActivatedLinks>;
  deactivateAttachment(input: AttachmentInput): Promise<void>;
  /** Ends the agent's offer of a pre-produced lease; the ADD answered from it, if any. */
  revokeOffer(revocation: OfferRevocation): Promise<OfferAnswer | null>;
}

/** Failure types of the node agent; all but invalid input are retried inside the budget. */
export const DataplaneFailure = {
  netnsMissing: 'NetnsMissing',
  linkConflict: 'LinkConflict',
  command: 'IpCommandFailed',
  invalidInput: 'InvalidAttachment',
  /** A removal of the attachment came while it was activated: the activation stopped, undone. */
  superseded: 'ActivationSuperseded',
} as const;

/** The longest one activation may take, retries included: then the lease parks. */
export function activationBudgetSeconds(policy: ActivationPolicy): number {
  let total = 0;
  for (let attempt = 0; attempt < policy.maximumAttempts; attempt++) {
    const backoff =
      attempt === 0
        ? 0
        : Math.min(policy.initialIntervalSeconds * 2 ** (attempt - 1), policy.maximumIntervalSeconds);
    total += backoff + policy.attemptTimeoutSeconds;
  }
  return Math.ceil(total);
}
