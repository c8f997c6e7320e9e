// The lease's versions. Each patch below marks histories written by code that changed the lease's
// commands; a run's own history says which it has (test/fixtures/histories replay every version).
// Runs started by this code carry one marker, `one-add-path`, read once at the start: it implies
// every patch before it, whose markers it no longer writes (each marker is two events, the marker
// and the TemporalChangeVersion upsert the SDK adds to it, and a visibility write).
import { patched } from '@temporalio/workflow';

/**
 * Histories in which the release signal and the deactivate update emit their commands in their own
 * job (older ones emitted them from the main body / after a wait).
 */
export const COMMANDS_AT_JOB = 'commands-at-job';

/**
 * Histories whose stall timer is left to fire (or to be dropped with the workflow) instead of
 * being cancelled when the lease leaves Active: the cancellation came from a continuation, and a
 * continuation's command can land elsewhere among a task's commands on replay (the soak found one
 * beside a release signal and a deactivate update, test/workflow/lease-message-order).
 */
export const STALL_TIMER_KEPT = 'stall-timer-kept';

/**
 * Histories in which a confirmAnswer that comes while the lease is releasing hands its sandbox to
 * the release (older ones refused it, and the interface the agent made was left).
 */
export const ANSWER_INTO_RELEASE = 'answer-into-release';

/**
 * Histories in which a release saying the node is gone, coming while an earlier release (which
 * did not know it) waits on the node's agent to revoke its offer or deactivate, drops those steps:
 * a deleted node's agent never answers, and the addresses were held for the hour of their budget.
 */
export const NODE_GONE_ENDS_DEACTIVATION = 'node-gone-ends-deactivation';

/**
 * Histories in which a newer sandbox's claim stops the activation of an older one (older ones
 * activated every claimed sandbox in turn, each with its whole budget). The kubelet runs one
 * sandbox per pod at a time: a new one (a machine that took over the node's name, a runtime that
 * gave up on the first) means the older is gone, and its namespace may never come (the soak).
 */
export const NEWER_SANDBOX_FIRST = 'newer-sandbox-first';

/**
 * Histories in which an ADD after a withdrawn guess failed to produce (a Node not known yet, a
 * pool not served) produces again on its own terms. Older ones answered every later ADD with that
 * first failure, even one of other, valid terms (the fuzz, seed 579550361).
 */
export const PRODUCE_AGAIN_AFTER_FAILED_GUESS = 'produce-again-after-failed-guess';

/**
 * Histories of the one ADD path (issue 27): produce and return run as local activities first (their
 * completion needs no workflow task of its own); a ptp ADD whose agent makes the interface gets the
 * grant once the addresses are produced and the agent confirms its answer (as from an offer); a
 * phase the same step leaves again is not upserted, nor addresses that did not change.
 */
export const ONE_ADD_PATH = 'one-add-path';

/**
 * Histories in which a DEL of the sandbox being activated stops that activation (older ones waited
 * for its whole budget: a sandbox the runtime gave up on has no namespace, and its DEL, queued on
 * the node meanwhile, waited minutes; the upgrade test's DEL queue). Newer than ONE_ADD_PATH, so
 * read where it decides, not implied by it.
 */
export const DEL_STOPS_ACTIVATION = 'del-stops-activation';

export type EarlierPatch =
  | typeof COMMANDS_AT_JOB
  | typeof STALL_TIMER_KEPT
  | typeof ANSWER_INTO_RELEASE
  | typeof NODE_GONE_ENDS_DEACTIVATION
  | typeof NEWER_SANDBOX_FIRST
  | typeof PRODUCE_AGAIN_AFTER_FAILED_GUESS;

export class LeasePatches {
  /** Read in the run's first task: a run the older code started keeps its ways to the end. */
  readonly oneAddPath = patched(ONE_ADD_PATH);

  /** Whether this run has an earlier patch: every one-add-path run has them all. */
  has(patch: EarlierPatch): boolean {
    return this.oneAddPath || patched(patch);
  }
}
