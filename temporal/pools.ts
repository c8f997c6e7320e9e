// The pools a control plane serves, as the node agents can see them: the control worker keeps one
// open pool/<name> workflow per configured pool (started at its start), so an ADD naming another
// pool is refused on the node before any lease workflow exists.
import type { Client } from '@temporalio/client';
import type { NetleaseConfig } from '../domain/config';
import { poolWorkflowId } from '../domain/ids';
import { POOL_WORKFLOW_TYPE, type PoolInput } from '../workflows/pool-messages';
import { workflowIsGone } from './workflow-gone';

/** Starts each configured pool's workflow unless it runs (the first block would start it too). */
export async function ensurePoolWorkflows(client: Client, config: NetleaseConfig): Promise<void> {
  for (const spec of config.pools) {
    await client.workflow.start(POOL_WORKFLOW_TYPE, {
      workflowId: poolWorkflowId(spec.name),
      taskQueue: config.temporal.taskQueue,
      args: [{ spec, historyLimit: config.nodeHistoryLimit } satisfies PoolInput],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  }
}

const KNOWN_FOR_MS = 60_000;
/** `namespace/pool` → until when it is known to be served (a pool is rarely removed). */
const known = new Map<string, number>();

/** Whether the control plane serves this pool: its pool workflow is open. */
export async function poolIsServed(client: Client, pool: string): Promise<boolean> {
  const key = `${client.options.namespace}/${pool}`;
  if ((known.get(key) ?? 0) > Date.now()) return true;
  if (await workflowIsGone(client, poolWorkflowId(pool))) return false;
  known.set(key, Date.now() + KNOWN_FOR_MS);
  return true;
}
