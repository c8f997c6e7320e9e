// A lease as the shim sees it: gone, or its state. DEL and GC end one attachment through the
// deactivate update, which is idempotent (a second call finds no attachment); a lease that is
// gone has nothing left to deactivate.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { delUpdateId } from '../domain/ids';
import type { LeaseState } from '../domain/lease';
import { isGoneError, workflowIsGone } from '../temporal/workflow-gone';
import { deactivateUpdate, leaseStateQuery } from '../workflows/lease-messages';

/** The lease's state, or undefined when it is gone (never started, or closed). */
export async function leaseStateOf(client: Client, workflowId: string): Promise<LeaseState | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).query(leaseStateQuery);
  } catch (err) {
    if (await workflowIsGone(client, workflowId)) return undefined;
    throw err;
  }
}

export async function deactivateAttachment(
  client: Client,
  workflowId: string,
  containerId: string,
  ifName: string,
): Promise<void> {
  // No describe first: a lease that is gone usually says so in the update's answer (one RPC).
  try {
    await client.workflow.getHandle(workflowId).executeUpdate(deactivateUpdate, {
      args: [{ containerId, ifName }],
      updateId: delUpdateId(containerId, ifName, randomUUID()),
    });
  } catch (err) {
    // Never started, or closed (also when it closed while the call failed some other way).
    if (isGoneError(err) || (await workflowIsGone(client, workflowId))) return;
    throw err;
  }
}
