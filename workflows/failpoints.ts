// Test-only pause points in workflow code (the soak, docs/testing.md, "The soak"). A sink call issues no
// command and is not made on replay, so a history is the same with or without it. The control
// worker's sink (worker/control/failpoint-sinks) holds the completion of the workflow task that
// reached the point only when NETLEASE_DATAPLANE_PAUSE_AFTER names it: a crash or a stall there.
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface FailpointSinks extends Sinks {
  failpoints: { reached(step: string): void };
}

const { failpoints } = proxySinks<FailpointSinks>();

/** The workflow task that reaches `step` is held here when a test asks (a no-op otherwise). */
export const failpoint = (step: string): void => failpoints.reached(step);
