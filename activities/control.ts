// Activities of the control worker (task queue netlease-control).
import { asyncLocalStorage } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { addressActivities } from './addresses';
import { blockActivities } from './blocks';
import type { ControlDeps } from './deps';
import { reconcileActivities } from './reconcile';
import { tableEvidenceActivities } from './table-evidence';

export function createControlActivities(deps: ControlDeps) {
  return endingWithTheActivity(deps.client, {
    ...addressActivities(deps),
    ...blockActivities(deps),
    ...reconcileActivities(deps),
    ...tableEvidenceActivities(deps),
  });
}

export type ControlActivities = ReturnType<typeof createControlActivities>;

type ActivityFunction = (...args: never[]) => Promise<unknown>;

/**
 * A cancelled activity ends at once, and the Temporal calls it made are cancelled with it. A worker
 * that shuts down cancels its activities after its grace time; an update to a workflow this same
 * worker serves (a pool, a node) is never taken once it stops polling, and the SDK's update call
 * sends again after an abort, so its shutdown would wait for that activity for good. What the call
 * went on to do is idempotent (deterministic update ids): the next attempt gets the same answer.
 */
function endingWithTheActivity<T extends Record<string, ActivityFunction>>(client: Client, activities: T): T {
  const wrapped = Object.entries(activities).map(([name, activity]) => {
    const call = (...args: never[]): Promise<unknown> => {
      const context = asyncLocalStorage.getStore();
      if (!context) return activity(...args);
      const running = client.withAbortSignal(context.cancellationSignal, () => activity(...args));
      return Promise.race([running, context.cancelled]);
    };
    return [name, call] as const;
  });
  return Object.fromEntries(wrapped) as T;
}
