// zod for the workflow sandbox, evaluated once per V8 context instead of once per workflow.
//
// The control worker runs every workflow in one reused V8 context (reuseV8Context), where each
// workflow gets its own copy of every bundled module: each new or re-cached lease evaluated all of
// zod again, 95 modules (64 of them locales), for some 7 ms of control-worker CPU per cold ADD
// (garbage collection included) and 0.6 MiB of heap per cached workflow. tools/bundle-workflows
// preloads this module, so it is shared by every workflow, and points every other
// `import ... from 'zod'` of bundled code at ./zod, which asks it for zod.
//
// zod itself is not preloaded: the SDK deep-freezes preloaded modules, and zod 4 installs methods on
// its prototypes and its default locale on its config the first time a schema type is built. So the
// first workflow that needs zod evaluates it (in its own module cache) and the closure below keeps
// it for the others, unfrozen, as a Node process would share it between requests. That is safe
// because zod keeps no per-workflow state: its module-level state is its config (the same default
// locale whichever workflow sets it), weak maps keyed by schema, and a registry of `.meta()`, which
// bundled code does not use. Schemas stay per workflow: domain modules are still evaluated per
// workflow and build their own.
import type * as Zod from 'zod';

let zod: typeof Zod | undefined;

/** zod's exports: evaluated by the first workflow that asks, then the same for all. */
export function sharedZod(): typeof Zod {
  // Lazy on purpose: evaluated at preload time, zod would be deep-frozen with the preloaded modules.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  zod ??= require('zod') as typeof Zod;
  return zod;
}
