// The pools a control plane serves, as the node agents can see them: the control worker keeps one
// open pool/<name> workflow per configured pool (started at its start), so an ADD naming another
// pool is refused on the node before any lease workflow exists.
import type { Client } from '@temporalio/client';
import type { NetleaseConfig } from '../domain/config';
import { poolWorkflowId } from '../domain/ids';
import { POOL_WORKFLOW_TYPE, type PoolInput } from '../workflows/pool-messages';
import { unlessGone } from './workflow-gone';

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
/** `namespace/pool` → the task queue it is served on, and until when that is known (a pool is rarely removed). */
const known = new Map<string, { taskQueue: string; until: number }>();

/**
 * The task queue the control plane serves this pool on (its open pool workflow's), or undefined
 * when it does not serve it. A lease started on another task queue would wait for a worker forever.
 */
export async function poolTaskQueue(client: Client, pool: string): Promise<string | undefined> {
  const key = `${client.options.namespace}/${pool}`;
  const cached = known.get(key);
  if (cached && cached.until > Date.now()) return cached.taskQueue;
  const describe = () => client.workflow.getHandle(poolWorkflowId(pool)).describe();
  const description = await unlessGone(describe, undefined);
  if (description?.status.name !== 'RUNNING') return undefined;
  known.set(key, { taskQueue: description.taskQueue, until: Date.now() + KNOWN_FOR_MS });
  return description.taskQueue;
}

/** Whether the control plane serves this pool: its pool workflow is open. */
export async function poolIsServed(client: Client, pool: string): Promise<boolean> {
  return (await poolTaskQueue(client, pool)) !== undefined;
}
