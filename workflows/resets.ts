// Whether this run was reset, known the same way live and on replay. A reset run's worker sees a
// run id that differs from the original run id on its start event, but a replayer given its
// history sees the original one for both (the SDK core takes the run id from that event), so a
// decision on the run ids diverges on replay (the soak met it: "Non-deprecated patch marker
// encountered", replaying node runs an operator reset). What both see is the reset's own event, a
// failed workflow task of cause RESET_WORKFLOW, at its place in history: the core answers it, and
// nothing else, with a new random seed (derived from the new run id). The SDK applies that seed
// before the activation reaches the interceptors (or, in an activation with signals, as one of
// its jobs), and no public API tells of it: the seed is read from the SDK's activator.
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { getActivator } from '@temporalio/workflow/lib/global-attributes';

// Per workflow run: the bundle's modules are evaluated once per run (workflows/index.ts).
let resets = 0;
let seed: readonly number[] | undefined;
/** The run's random seed: a new array each time the SDK seeds it again. */
const currentSeed = (): readonly number[] => getActivator().randomnessSeed;

/** How many resets this run's history has passed so far (0: never reset). */
export const resetsSeen = (): number => resets;

/** Counts the re-seedings as activations arrive (bundled as a workflow interceptor module). */
export const interceptors: WorkflowInterceptorsFactory = () => {
  seed = currentSeed(); // the start event's: made as the run begins, before any reset's
  return {
    internals: [
      {
        activate: (input, next) => {
          if (currentSeed() !== seed) resets++;
          resets += (input.activation.jobs ?? []).filter((job) => job.updateRandomSeed).length;
          next(input);
          seed = currentSeed();
        },
      },
    ],
  };
};
