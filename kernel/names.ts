// Names and MACs of an attachment's links, derived from the attachment so every retry, the
// deactivation and CHECK find the same ones. Host link names fit IFNAMSIZ (15 characters).
import { createHash } from 'node:crypto';

export interface AttachmentLinkNames {
  /** `nl` + 13 hex digits of the attachment's hash. */
  hostName: string;
  hostMac: string;
  /** The pod end's MAC marks the link as netlease's: a same-named link with another MAC is not ours. */
  containerMac: string;
}

const HOST_PREFIX = 'nl';

function mac(bytes: Buffer): string {
  // 0x02: locally administered, unicast.
  return ['02', ...[...bytes.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

export function attachmentLinkNames(containerId: string, ifName: string): AttachmentLinkNames {
  const digest = createHash('sha256').update(`${containerId}/${ifName}`).digest();
  return {
    hostName: HOST_PREFIX + digest.toString('hex').slice(0, 13),
    hostMac: mac(digest.subarray(8)),
    containerMac: mac(digest.subarray(16)),
  };
}

export const isHostLinkName = (name: string): boolean => /^nl[0-9a-f]{13}$/.test(name);
