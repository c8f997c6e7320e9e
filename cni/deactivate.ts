// A lease as the shim sees it: gone, or its state. DEL and GC end one attachment through the
// deactivate update, which is idempotent (a second call finds no attachment); a lease that is
// gone has nothing left to deactivate.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { delUpdateId } from '../domain/ids';
import type { LeaseState } from '../domain/lease';
import { deactivateUpdate, leaseStateQuery } from '../workflows/lease-messages';

export async function isGone(client: Client, workflowId: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.status.name !== 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return true;
    throw err;
  }
}

/** The lease's state, or undefined when it is gone (never started, or closed). */
export async function leaseStateOf(client: Client, workflowId: string): Promise<LeaseState | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).query(leaseStateQuery);
  } catch (err) {
    if (await isGone(client, workflowId)) return undefined;
    throw err;
  }
}

export async function deactivateAttachment(
  client: Client,
  workflowId: string,
  containerId: string,
  ifName: string,
): Promise<void> {
  // No describe first: a lease that is gone answers the update with not-found (one RPC, not two).
  try {
    await client.workflow.getHandle(workflowId).executeUpdate(deactivateUpdate, {
      args: [{ containerId, ifName }],
      updateId: delUpdateId(containerId, ifName, randomUUID()),
    });
  } catch (err) {
    if (await isGone(client, workflowId)) return; // never started, or closed
    throw err;
  }
}
