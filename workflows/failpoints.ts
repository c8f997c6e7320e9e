// Test-only points in workflow code (the soak, docs/testing.md, "The soak"; the reconciler's
// wedged-lease tests).
//
// `failpoint`: a pause. A sink call issues no command and is not made on replay, so a history is the
// same with or without it. The control worker's sink (worker/control/failpoint-sinks) holds the
// completion of the workflow task that reached the point only when NETLEASE_DATAPLANE_PAUSE_AFTER
// names it: a crash or a stall there.
//
// `brokenAt`: a workflow task that fails for good. A run started with the memo
// `{ [FAILPOINT_MEMO]: step }` throws a plain Error (not an ApplicationFailure: it fails the
// workflow task, not the workflow) each time it reaches `step`, on every attempt and every replay,
// as an SDK nondeterminism does. The memo is in the run's history, so nothing outside it is read;
// netlease never starts a workflow with it.
import { proxySinks, workflowInfo, type Sinks } from '@temporalio/workflow';

export interface FailpointSinks extends Sinks {
  failpoints: { reached(step: string): void };
}

const { failpoints } = proxySinks<FailpointSinks>();

/** The memo key naming the step at which a run's workflow task fails (tests only). */
export const FAILPOINT_MEMO = 'netleaseFailpoint';

/** The workflow task that reaches `step` is held here when a test asks (a no-op otherwise). */
export const failpoint = (step: string): void => failpoints.reached(step);

/** Throws a plain Error at `step` in a run a test started to fail there (a no-op otherwise). */
export function brokenAt(step: string): void {
  if (workflowInfo().memo?.[FAILPOINT_MEMO] === step)
    throw new Error(`failpoint ${step}: this run's workflow task fails here on every attempt (test only)`);
}
