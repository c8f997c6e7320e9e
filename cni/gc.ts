// CNI GC: every attachment of this network on this node that the runtime no longer lists is
// deactivated, as a DEL would. Leases are found by their search attributes.
import type { Client } from '@temporalio/client';
import type { LeaseState } from '../domain/lease';
import { leaseStateQuery } from '../workflows/lease';
import { deactivateAttachment, isGone } from './deactivate';
import type { NetConf, ValidAttachment } from './netconf';

const quoted = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

async function stateOf(client: Client, workflowId: string): Promise<LeaseState | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).query(leaseStateQuery);
  } catch (err) {
    if (await isGone(client, workflowId)) return undefined;
    throw err;
  }
}

/** Returns the attachments it deactivated, as `containerId/ifName`. */
export async function collectGarbage(
  client: Client,
  conf: NetConf,
  nodeName: string,
  valid: ValidAttachment[],
): Promise<string[]> {
  const keep = new Set(valid.map((a) => `${a.containerID}/${a.ifname}`));
  const query = [
    `WorkflowType = 'leaseWorkflow'`,
    `ExecutionStatus = 'Running'`,
    `NodeName = ${quoted(nodeName)}`,
    `TaskQueue = ${quoted(conf.settings.temporal.taskQueue)}`,
  ].join(' AND ');
  const removed: string[] = [];
  for await (const execution of client.workflow.list({ query })) {
    const state = await stateOf(client, execution.workflowId);
    if (!state || (state.start.network ?? '') !== conf.name) continue;
    for (const attachment of state.attachments) {
      const key = `${attachment.containerId}/${attachment.ifName}`;
      if (keep.has(key)) continue;
      await deactivateAttachment(client, execution.workflowId, attachment.containerId, attachment.ifName);
      removed.push(key);
    }
  }
  return removed;
}
