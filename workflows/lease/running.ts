// confirm-running: an attachment became active, and the pod is Running (or not yet: the lease waits
// for it, visibly Stalled after the policy's time, never released for it).
import { CancellationScope, condition, isCancellation, log, sleep } from '@temporalio/workflow';
import type { Attachment } from '../../domain/lease';
import { brokenAt, failpoint } from '../failpoints';
import { STALL_TIMER_KEPT } from './patches';
import type { LeaseRun } from './run';

export class Running {
  constructor(private readonly run: LeaseRun) {}

  /** The attachment is active: Running if the pod is, else Active with the stall timer started. */
  activated(attachment: Attachment): void {
    attachment.status = 'active';
    this.run.state.lastError = undefined;
    if (this.run.podRunning) this.run.enter('Running', 'pod is Running');
    else {
      this.run.enter('Active', 'interface ready; waiting for the pod to be Running');
      void this.watchForStall();
    }
  }

  /** confirm-running: the pod with this UID is Running (watch hint verified by a quorum read). */
  confirmRunning(): void {
    const { run } = this;
    log.info('podRunning signal received', { phase: run.state.phase });
    brokenAt('pod-running');
    failpoint('pod-running');
    run.podRunning = true;
    if (run.state.phase === 'Active' || run.state.phase === 'Stalled') run.enter('Running', 'pod is Running');
  }

  /** Active for too long without the pod Running: visible as Stalled, never released for it. */
  private async watchForStall(): Promise<void> {
    const { run } = this;
    const seconds = run.policy?.stalledAfterSeconds ?? 600;
    const stillActive = () => !run.podRunning && run.state.phase === 'Active';
    if (run.patches.has(STALL_TIMER_KEPT)) {
      // Not cancellable (it may start inside an activation's scope, which a release cancels).
      await CancellationScope.nonCancellable(() => sleep(`${seconds} seconds`));
      if (stillActive()) run.enter('Stalled', `active for ${seconds} s but the pod is not Running`);
      return;
    }
    const settled = await condition(
      () => run.podRunning || run.state.phase !== 'Active',
      `${seconds} seconds`,
    ).catch((err: unknown) => {
      if (isCancellation(err)) return true; // cancelled: the lease is released
      throw err;
    });
    if (!settled && run.state.phase === 'Active')
      run.enter('Stalled', `active for ${seconds} s but the pod is not Running`);
  }
}
