// produceAddresses and returnAddresses: the lease's calls to its node workflow (through the control
// worker's activities). In one-add-path runs each runs first as a local activity: it completes in
// the workflow task that scheduled it, with no task of its own for its result (a lifecycle's
// produce and return were two of its nine tasks). A local activity holds that task open, so it gets
// a few seconds; past them (the cluster or the node workflow away) the same call goes on as an
// ordinary activity, which retries on the server without holding anything, as before.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ControlActivities } from '../../activities/control';
import type { ProduceInput, Produced } from '../../activities/addresses';
import type { AddressGrant } from '../../domain/allocation';
import { FailureType } from '../../domain/lease';

const retry: ActivityOptions['retry'] = {
  initialInterval: '200 ms',
  maximumInterval: '10 seconds',
  nonRetryableErrorTypes: [
    FailureType.invalidConfig,
    FailureType.nodeUnknown,
    FailureType.exhausted,
    FailureType.conflict,
    FailureType.released,
    FailureType.staticAddressHeld,
    FailureType.stickyAddressFenced,
  ],
};

/** What a local call fails with when the node asks for the call again: the ordinary activity waits. */
const GOES_ON: string[] = [FailureType.tableRebuilding, FailureType.nodeContinuing];

const remote = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  // They heartbeat while they run: a worker killed mid-call costs 10 s, not 30 (the SDK's
  // heartbeats come every 8 s at most, so 2 s of slack for a busy server).
  heartbeatTimeout: '10 seconds',
  retry,
});

/**
 * Well under the 8 s after which the SDK heartbeats a workflow task that waits on a local activity
 * (10 s task timeout): a call that takes longer is not one a local activity saves a task on. The
 * task holds a workflow task slot of the control worker meanwhile, and the node workflow's task the
 * call waits for needs one too: with every slot held by such leases (a burst beyond the worker's
 * slots, worker/control/control-worker) this is how long they wait before going on as ordinary
 * activities, which hold none. A worker killed meanwhile costs the task's timeout, as the
 * activity's heartbeat timeout did.
 */
const local = proxyLocalActivities<ControlActivities>({
  scheduleToCloseTimeout: '3 seconds',
  // Bounds of their own: sdk-core drops a schedule-to-close timeout that fires while the call backs
  // off between attempts, so a call that fails fast would retry in the task for ever. Three
  // attempts at most, each cut after 4 s: past the 3 s, so that the first attempt of a call that
  // hangs is ended by the schedule-to-close timeout (final) and not by its own (retried; the two
  // raced when equal, under load).
  startToCloseTimeout: '4 seconds',
  retry: {
    ...retry,
    maximumAttempts: 3,
    // Not retried here: the node asks for the call again later (a rebuild, continue-as-new).
    nonRetryableErrorTypes: [...(retry?.nonRetryableErrorTypes ?? []), ...GOES_ON],
  },
});

/**
 * Marks runs in which a local call that sdk-core cancelled goes on as an ordinary activity (before,
 * the cancellation failed the lease).
 */
const CANCELLED_LOCAL_GOES_ON = 'cancelled-local-call-goes-on';

/**
 * A failure the ordinary activity would not retry either: the lease decides on it at once. A
 * timeout is not: the call goes on as an ordinary activity. (A local activity's timeout reaches
 * the workflow as an ActivityFailure when it happens and as the bare TimeoutFailure of its marker
 * on replay: both are read the same.) Nor is a cancellation: the lease's calls run in
 * non-cancellable scopes, so a local call is cancelled only by sdk-core itself (in the 1,000-node
 * scale run, a return cancelled at attempt 0 before it ran, the worker overloaded, failed its lease).
 */
function isFinal(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) return false;
  if (cause instanceof CancelledFailure) return !patched(CANCELLED_LOCAL_GOES_ON);
  if (!(cause instanceof ApplicationFailure)) return true;
  if (GOES_ON.includes(cause.type ?? '')) return false;
  return cause.nonRetryable || (retry?.nonRetryableErrorTypes ?? []).includes(cause.type ?? '');
}

/**
 * The local call, then (not final, not cancelled) the ordinary one with the same input. Whatever
 * the local call's outcome, the lease goes on only once the other jobs of its activation have run.
 */
async function localFirst<T>(local: () => Promise<T>, remote: () => Promise<T>): Promise<T> {
  const outcome = await local().then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  await CancellationScope.nonCancellable(activationSettled);
  if (outcome.ok) return outcome.value;
  if (isFinal(outcome.err)) throw outcome.err;
  return remote();
}

/**
 * Until the jobs of the current activation have run as far as they go. A local activity that
 * outlives its workflow task (the task carried a query, or waited past its heartbeat at 80 % of
 * the task timeout) has its result delivered in a later task: live, in an activation of its own
 * once that task's other jobs have run; on replay, in the task's first activation beside them
 * (sdk-core resolves a marker it finds among the task's commands when the task starts, and sorts
 * local results after the other jobs). Its continuation would then race theirs microtask by
 * microtask and issue its commands first where the live run issued them after (the soak: the
 * fallback activity before a deactivate update's completion). The SDK asks blocked conditions
 * again only once the activation's microtasks are done, so a condition false when first asked and
 * true when asked again opens after them, both live and on replay. No command changes with it.
 */
function activationSettled(): Promise<void> {
  let asked = false;
  return condition(() => {
    const again = asked;
    asked = true;
    return again;
  });
}

type Summary = { summary: string };

export function produceAddresses(
  oneAddPath: boolean,
  options: Summary,
  input: ProduceInput,
): Promise<Produced> {
  const ordinary = () => remote.produceAddresses.executeWithOptions(options, [input]);
  if (!oneAddPath) return ordinary();
  return localFirst(() => local.produceAddresses.executeWithOptions(options, [input]), ordinary);
}

export function returnAddresses(
  oneAddPath: boolean,
  options: Summary,
  input: Omit<ProduceInput, 'podUid'>,
): Promise<AddressGrant[]> {
  const ordinary = () => remote.returnAddresses.executeWithOptions(options, [input]);
  if (!oneAddPath) return ordinary();
  return localFirst(() => local.returnAddresses.executeWithOptions(options, [input]), ordinary);
}
