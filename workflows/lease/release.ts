// release: the pod is gone (the watcher, the reconciler, the node workflow), an operator asked, or
// the workflow was cancelled. The node agent's offer is revoked, the attachments deactivated
// (skipped when the node is gone) and the addresses returned; the run then completes.
import { CancellationScope, log } from '@temporalio/workflow';
import { ReleaseSchema } from '../../domain/lease';
import { describeIssues } from '../../domain/text-schemas';
import { noteIgnored } from '../notes';
import type { Deactivation } from './deactivation';
import { COMMANDS_AT_JOB, NODE_GONE_ENDS_DEACTIVATION } from './patches';
import type { Production } from './production';
import type { LeaseRun } from './run';

/** The release reason of a lease whose workflow was cancelled (UI, `temporal workflow cancel`). */
export const CANCELLED_REASON = 'cancelled: a cancellation of the lease workflow was requested';

export class Release {
  /** A revocation the node workflow asked for (nodeReplaced); the release waits for it. */
  private revoking: Promise<void> | undefined;
  private releaseRun: Promise<void> | undefined;

  constructor(
    private readonly run: LeaseRun,
    private readonly production: Production,
    private readonly deactivation: Deactivation,
  ) {}

  /**
   * The `release` signal. A signal cannot be refused, and a handler that throws fails every
   * workflow task, wedging the lease: input without a reason (none, `{}`) is ignored, logged and
   * shown in the current details. Release takes the addresses from a pod that may be running, so
   * it is never guessed from an empty form.
   */
  requestRelease(request: unknown): void {
    const { run } = this;
    const parsed = ReleaseSchema.safeParse(request);
    if (parsed.success) {
      const unknowing = run.releaseRequest && !run.releaseRequest.nodeGone;
      if (unknowing && parsed.data.nodeGone && run.patches.has(NODE_GONE_ENDS_DEACTIVATION)) {
        this.deactivation.nodeGoneLater = true;
        log.info('the node is gone: deactivations still waiting on its agent are dropped');
      }
      run.releaseRequest ??= parsed.data;
      log.info('release signal received', { reason: run.releaseRequest.reason, phase: run.state.phase });
      if (this.nothingInFlight() && run.patches.has(COMMANDS_AT_JOB)) void this.start();
      return;
    }
    const problems = request === undefined ? 'no input' : describeIssues(parsed.error);
    const text = `ignored a release signal (${problems}): send \`{"reason":"<why>"}\` to release the lease`;
    noteIgnored(text, { leaseId: run.leaseId });
  }

  /**
   * nodeReplaced: the node's new incarnation adopted this lease (its pod lives on). An offer the
   * old incarnation's agent holds is revoked: the pod's next ADD is served by the lease.
   */
  nodeReplaced(event: unknown): void {
    const { run } = this;
    const uid = (event as { uid?: unknown } | undefined)?.uid;
    if (typeof uid !== 'string' || !uid) return noteIgnored('ignored a nodeReplaced signal (no uid)');
    log.info('adopted by a new node incarnation', { uid, offered: run.offered });
    if (!run.offered || run.releasing()) return;
    this.revoking = this.deactivation.revokeOffer();
  }

  /** The workflow was cancelled: released like any release, the reason says so. */
  cancelled(): void {
    this.run.releaseRequest ??= { reason: CANCELLED_REASON, nodeGone: false };
  }

  /**
   * The release runs once. The release signal starts it in its own job when nothing is in flight:
   * the SDK runs the jobs of one workflow task with or without running the workflow's continuations
   * between them (the first run and a replay may differ: a signal's continuation before an update's
   * acceptance, or after it), so commands issued from a continuation can come out in another order
   * on replay. Commands issued in a job keep the jobs' order. A produce or an activation in flight
   * ends first (the main body starts the release then).
   */
  start(): Promise<void> {
    this.run.releaseStarted = true;
    this.releaseRun ??= CancellationScope.nonCancellable(() => this.release());
    return this.releaseRun;
  }

  private nothingInFlight(): boolean {
    const { state } = this.run;
    return state.phase !== 'Producing' && !state.attachments.some((a) => a.status === 'activating');
  }

  /** Deactivate on the node (skipped when the node is gone), return the addresses. */
  private async release(): Promise<void> {
    const { run } = this;
    if (run.produceFailure) {
      run.enter('Released', `produce failed: ${run.produceFailure.message}`);
      log.info('lease released', { reason: `produce failed: ${run.produceFailure.message}`, addresses: [] });
      return;
    }
    const request = run.releaseRequest ?? { reason: 'released', nodeGone: false };
    run.state.releaseReason = request.reason;
    // Nothing on the node to wait for (ipam, or the node gone): only the return, which ends the run.
    const onNode =
      !request.nodeGone && (run.offered || (run.start.mode !== 'ipam' && run.state.attachments.length > 0));
    run.enter(
      'Releasing',
      `${request.reason}; deactivating and returning addresses`,
      onNode || this.revoking !== undefined,
    );
    if (this.revoking) await this.revoking; // no await otherwise: the commands keep their order
    if (run.offered && !request.nodeGone) await this.deactivation.revokeOffer();
    await this.deactivation.deactivateAll(request.nodeGone);
    await this.production.giveBack();
    // A sandbox handed over after the addresses went back (an answer confirmed late) goes too.
    await this.deactivation.deactivateAll(request.nodeGone);
    run.enter('Released', `${request.reason}; addresses returned`);
    log.info('lease released', {
      reason: request.reason,
      addresses: run.state.addresses.map((a) => a.address),
    });
  }
}
