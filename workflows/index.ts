// Every workflow the control worker runs; this file is the root of the workflow bundle.
// Each workflow type's modules are evaluated only when a workflow of that type first runs (a
// require inside the function, which the bundle keeps lazy): the worker gives every cached
// workflow its own copy of each module it evaluates, and leases, nearly all of them, need none of
// the node workflow's (about 190 KiB of heap per cached lease, measured).
/* eslint-disable no-restricted-globals, @typescript-eslint/no-require-imports -- lazy on purpose */
import type * as Lease from './lease';
import type * as Node from './node';
import type * as Pool from './pool';
import type * as Reconcile from './reconcile';

export function leaseWorkflow(...args: Parameters<typeof Lease.leaseWorkflow>) {
  return (require('./lease') as typeof Lease).leaseWorkflow(...args);
}

export function nodeWorkflow(...args: Parameters<typeof Node.nodeWorkflow>) {
  return (require('./node') as typeof Node).nodeWorkflow(...args);
}

export function poolWorkflow(...args: Parameters<typeof Pool.poolWorkflow>) {
  return (require('./pool') as typeof Pool).poolWorkflow(...args);
}

export function reconcileWorkflow(...args: Parameters<typeof Reconcile.reconcileWorkflow>) {
  return (require('./reconcile') as typeof Reconcile).reconcileWorkflow(...args);
}
