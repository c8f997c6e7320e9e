// The pools a control plane serves, as the node agents can see them: the control worker keeps one
// open pool/<name> workflow per configured pool (opened and configured at its start), so an ADD
// naming another pool is refused on the node before any lease workflow exists. Each pool
// workflow's memo lists every pool the control worker serves: a pool that is configured but not
// open (the control plane starting, or the pool being started again) is "try again later", never
// "unknown pool".
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { NetleaseConfig, PoolSpec } from '../domain/config';
import { ConfigError } from '../domain/config';
import { FailureType } from '../domain/lease';
import { poolWorkflowId } from '../domain/ids';
import {
  CONFIGURED_POOLS_MEMO,
  configureUpdate,
  POOL_WORKFLOW_TYPE,
  type PoolInput,
} from '../workflows/pool-messages';
import { servedPoolSpec } from './histories';
import { startAgain } from './start-again';
import { openPoolsQuery } from './visibility';
import { isGoneError, isOutlivedUpdate, isUpdateRefusal, unlessGone } from './workflow-gone';
import { WorkflowUpdateFailedError } from '@temporalio/client';

/** The start options of a pool's workflow. */
export const poolStart = (config: NetleaseConfig, spec: PoolSpec, restartedAfter?: string) => {
  const configuredPools = config.pools.map((p) => p.name);
  const input: PoolInput = { spec, historyLimit: config.nodeHistoryLimit, configuredPools, restartedAfter };
  return {
    taskQueue: config.temporal.taskQueue,
    args: [input] as [PoolInput],
    memo: { [CONFIGURED_POOLS_MEMO]: configuredPools },
  };
};

/**
 * Opens each configured pool's workflow (a closed one is started again and rebuilds its blocks).
 * Before the control worker runs: the agents refuse an ADD for a pool with no open workflow.
 */
export async function openPoolWorkflows(client: Client, config: NetleaseConfig): Promise<void> {
  for (const spec of config.pools) await openPool(client, config, spec);
}

/**
 * Starts a closed pool's workflow again (naming the closed run) on the spec that run served, not
 * on `spec`: the new run rebuilds its blocks, and a changed spec is then judged by `configure`
 * against them like any change (a control worker with an unsafe change that found the pool
 * terminated took its spec in unjudged: the soak). `spec` when the closed run's history is gone.
 */
export function startPoolAgain(client: Client, config: NetleaseConfig, spec: PoolSpec) {
  const workflowId = poolWorkflowId(spec.name);
  return startAgain(client, workflowId, POOL_WORKFLOW_TYPE, async (why, closedRunId) =>
    poolStart(config, (await servedPoolSpec(client, workflowId, closedRunId)) ?? spec, why),
  );
}

/** Started when it never ran, started again (naming the closed run) when it closed. */
async function openPool(client: Client, config: NetleaseConfig, spec: PoolSpec): Promise<void> {
  const closed = await startPoolAgain(client, config, spec);
  if (closed === undefined)
    await client.workflow.start(POOL_WORKFLOW_TYPE, {
      ...poolStart(config, spec),
      workflowId: poolWorkflowId(spec.name),
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
}

/**
 * Configures each open pool with the control worker's spec (a worker must run: it is an update).
 * A change that would move addresses out from under its handed-out blocks is refused: the
 * control worker stops, and the error names the field and the way out.
 */
export async function configurePoolWorkflows(client: Client, config: NetleaseConfig): Promise<void> {
  for (const spec of config.pools) await configurePool(client, config, spec);
}

/**
 * Opens one pool's workflow and configures it with `spec` (a NetleasePool's, as it changes). A
 * refusal is a ConfigError and changes nothing: the pool keeps serving on the spec it has.
 */
export async function openAndConfigurePool(client: Client, config: NetleaseConfig, spec: PoolSpec) {
  await openPool(client, config, spec);
  await configurePool(client, config, spec);
}

/** Pools whose workflow closed (terminated from the UI) are started again; the reconciler's step. */
export async function reopenClosedPools(client: Client, config: NetleaseConfig): Promise<string[]> {
  const reopened: string[] = [];
  for (const spec of config.pools) {
    const closed = await startPoolAgain(client, config, spec);
    if (closed === undefined || closed === 'RUNNING') continue;
    await configurePool(client, config, spec);
    reopened.push(spec.name);
  }
  return reopened;
}

/** Closed before it took the update (terminated from the UI meanwhile): not the config's fault. */
const closedMeanwhile = (err: unknown): boolean => isGoneError(err) || isOutlivedUpdate(err);

/** Times a pool closed under its configure is opened again before the control worker gives up. */
const REOPENS = 5;

/** How long a changed spec waits for a run rebuilding its blocks (it asks again every half second). */
const REBUILD_WAIT_MS = 120_000;
const REBUILD_POLL_MS = 500;

/** The run was rebuilding its blocks: it could not judge a changed spec yet (workflows/pool). */
const stillRebuilding = (err: unknown): boolean =>
  isUpdateRefusal(err) && (err.cause as { type?: string } | undefined)?.type === FailureType.tableRebuilding;

/**
 * The pool's own check of the spec; a refusal is a ConfigError. A run that closed before it took
 * the update is started again (it rebuilds its blocks) and asked again.
 */
async function configurePool(client: Client, config: NetleaseConfig, spec: PoolSpec): Promise<void> {
  const configuredPools = config.pools.map((p) => p.name);
  const handle = client.workflow.getHandle(poolWorkflowId(spec.name));
  const askUntil = Date.now() + REBUILD_WAIT_MS;
  for (let reopened = 0; ;) {
    try {
      return void (await handle.executeUpdate(configureUpdate, { args: [{ spec, configuredPools }] }));
    } catch (err) {
      if (closedMeanwhile(err) && reopened++ < REOPENS) await openPool(client, config, spec);
      else if (stillRebuilding(err) && Date.now() < askUntil) await sleep(REBUILD_POLL_MS);
      else if (err instanceof WorkflowUpdateFailedError)
        throw new ConfigError(err.cause?.message ?? err.message);
      else throw err;
    }
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

const configuredIn = (execution: WorkflowExecutionInfo): string[] => {
  const listed = execution.memo?.[CONFIGURED_POOLS_MEMO];
  return Array.isArray(listed) ? listed.map(String) : [];
};

/**
 * A pool with no open workflow: 'starting' when it is configured (an open pool of this control
 * plane lists it in its memo, or it ran before: a closed pool is started again by the control
 * worker); 'unknown' when nothing says so (a mistake in the request: a pool, task queue or
 * namespace no control plane serves).
 */
export async function unopenedPool(
  client: Client,
  pool: string,
  taskQueue: string,
): Promise<'starting' | 'unknown'> {
  const ran = await unlessGone(() => client.workflow.getHandle(poolWorkflowId(pool)).describe(), undefined);
  if (ran?.taskQueue === taskQueue) return 'starting';
  for await (const execution of client.workflow.list({ query: openPoolsQuery(taskQueue) }))
    if (configuredIn(execution).includes(pool)) return 'starting';
  return 'unknown';
}
