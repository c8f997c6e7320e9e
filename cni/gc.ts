// CNI GC: every attachment of this network on this node that the runtime no longer lists is
// deactivated, as a DEL would. Leases are found by their search attributes.
import type { Client } from '@temporalio/client';
import { leasesOfNode } from '../temporal/visibility';
import { deactivateAttachment, leaseStateOf } from './deactivate';
import type { NetConf, ValidAttachment } from './netconf';

/** Returns the attachments it deactivated, as `containerId/ifName`. */
export async function collectGarbage(
  client: Client,
  conf: NetConf,
  nodeName: string,
  valid: ValidAttachment[],
): Promise<string[]> {
  const keep = new Set(valid.map((a) => `${a.containerID}/${a.ifname}`));
  const removed: string[] = [];
  for (const lease of await leasesOfNode(client, conf.settings.temporal.taskQueue, nodeName)) {
    const state = await leaseStateOf(client, lease.workflowId);
    if (!state || (state.start.network ?? '') !== conf.name) continue;
    for (const attachment of state.attachments) {
      const key = `${attachment.containerId}/${attachment.ifName}`;
      if (keep.has(key)) continue;
      await deactivateAttachment(client, lease.workflowId, attachment.containerId, attachment.ifName);
      removed.push(key);
    }
  }
  return removed;
}
