// Activities of the control worker (task queue netlease-control).
import { addressActivities } from './addresses';
import { blockActivities } from './blocks';
import type { ControlDeps } from './deps';
import { reconcileActivities } from './reconcile';
import { tableEvidenceActivities } from './table-evidence';

export function createControlActivities(deps: ControlDeps) {
  return {
    ...addressActivities(deps),
    ...blockActivities(deps),
    ...reconcileActivities(deps),
    ...tableEvidenceActivities(deps),
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;
