// The seam between lease workflows and the node agent: what activation and deactivation get.
import type { AddressGrant } from './allocation';
import type { Attachment, LeaseStart } from './lease';

export const nodeTaskQueue = (nodeName: string): string => `netlease-node-${nodeName}`;

export interface AttachmentInput {
  leaseId: string;
  start: LeaseStart;
  attachment: Pick<Attachment, 'containerId' | 'netns' | 'ifName'>;
  addresses: AddressGrant[];
}

/** Node-local steps, run by the node agent on `netlease-node-<node>`. Both are idempotent. */
export interface DataplaneActivities {
  activateAttachment(input: AttachmentInput): Promise<void>;
  deactivateAttachment(input: AttachmentInput): Promise<void>;
}
