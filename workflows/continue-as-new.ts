// When to continue-as-new: the server suggests it, or history passed the configured limit.
//
// Decided on the history as a job the history holds last saw it (a signal, an accepted update, an
// activity's or a timer's end; sampled by this module's interceptors), not at every activation:
// an update its validator rejects leaves no event, so a replay gets no activation for its workflow
// task, and a run that continued in that task does not replay ("No command scheduled for event
// ContinuedAsNew": a pool in the soak, rejected while its history passed the limit). Runs begun
// before this rule read the length at every activation, as they did.
import {
  allHandlersFinished,
  condition,
  patched,
  workflowInfo,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';

const CONTINUE_ON_RECORDED_JOBS = 'continue-as-new-on-recorded-jobs';

interface HistorySeen {
  length: number;
  suggested: boolean;
}

const current = (): HistorySeen => ({
  length: workflowInfo().historyLength,
  suggested: workflowInfo().continueAsNewSuggested,
});

// Per workflow run: the bundle's modules are evaluated once per run (workflows/index.ts).
let seenByJob: HistorySeen = { length: 0, suggested: false };
const noteHistory = (): void => {
  seenByJob = current();
};

/** Whether the run's history is long enough to continue; ask once, as the run begins. */
export function historyGauge(limit: number): () => boolean {
  const onRecordedJobs = patched(CONTINUE_ON_RECORDED_JOBS);
  return () => {
    const seen = onRecordedJobs ? seenByJob : current();
    return seen.suggested || seen.length >= limit;
  };
}

/** Waits until history is long enough and every update/signal handler has finished. */
export async function untilTimeToContinue(tooLong: () => boolean): Promise<void> {
  await condition(tooLong);
  await condition(allHandlersFinished);
}

/** Notes the history at each job its events record (bundled as a workflow interceptor module). */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute: (input, next) => (noteHistory(), next(input)),
      handleSignal: (input, next) => (noteHistory(), next(input)),
      handleUpdate: (input, next) => (noteHistory(), next(input)), // accepted: validated first
    },
  ],
  outbound: [
    {
      scheduleActivity: (input, next) => next(input).then(noted),
      scheduleLocalActivity: (input, next) => next(input).then(noted),
      startTimer: (input, next) => next(input).then(noted),
    },
  ],
});

const noted = <T>(value: T): T => (noteHistory(), value);
