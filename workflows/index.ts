// Every workflow the control worker runs; this file is the root of the workflow bundle.
export { leaseWorkflow } from './lease';
export { nodeWorkflow } from './node';
export { poolWorkflow } from './pool';
export { reconcileWorkflow } from './reconcile';
