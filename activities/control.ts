// Activities of the control worker (task queue netlease-control).
import { addressActivities } from './addresses';
import { blockActivities } from './blocks';
import type { ControlDeps } from './deps';
import { reconcileActivities } from './reconcile';

export function createControlActivities(deps: ControlDeps) {
  return { ...addressActivities(deps), ...blockActivities(deps), ...reconcileActivities(deps) };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;
