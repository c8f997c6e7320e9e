// activate: the lease makes an attachment's interface itself, with the node agent's activation
// activity and the policy's retry budget. An ADD whose agent makes the interface does not come here
// (workflows/lease/grant); this is for an ADD that asks the lease (its agent could not make it, or
// an older caller), a parked attachment's `retry`, and ipam attachments (nothing to make).
import { condition, isCancellation, log } from '@temporalio/workflow';
import type { Attachment } from '../../domain/lease';
import { activateOnNode } from '../dataplane';
import { causeOf, describe } from '../failures';
import { NEWER_SANDBOX_FIRST } from './patches';
import type { Running } from './running';
import type { LeaseRun } from './run';

export class Activation {
  constructor(
    private readonly run: LeaseRun,
    private readonly running: Running,
  ) {}

  /** Activates each claimed attachment in turn until the lease is released. */
  async untilReleased(): Promise<void> {
    const { run } = this;
    const next = () => run.state.attachments.find((a) => a.status === 'pending');
    while (!run.releasing()) {
      await condition(() => run.releasing() || next() !== undefined);
      const attachment = next();
      if (attachment && !run.releasing()) await this.activate(attachment);
    }
  }

  /**
   * One run of the node-local steps with the policy's retry budget; parks when spent. A release
   * interrupts it, and so does the sandbox's DEL: retrying toward a sandbox that is gone (a deleted
   * pod, a replaced node, a sandbox the runtime gave up on) held the addresses, or the DEL, for the
   * whole budget. The release or the DEL then deactivates what it made, by name.
   */
  private async activate(attachment: Attachment): Promise<void> {
    const { run } = this;
    attachment.status = 'activating';
    // Nothing to make in ipam mode: the phase is left in the same step (not listed).
    const makes = run.start.mode !== 'ipam' && run.policy !== undefined;
    run.enter(
      'Activating',
      `configuring ${attachment.ifName} in ${attachment.netns || 'the runtime'}`,
      makes,
    );
    const superseded = run.patches.has(NEWER_SANDBOX_FIRST)
      ? () => this.newerClaim(attachment)
      : () => undefined;
    const deleted = () => run.deletedWhileActivating.has(attachment);
    try {
      attachment.links = await run.cancelledWhen(
        () => run.releasing() || deleted() || superseded() !== undefined,
        () => activateOnNode(run.start, attachment, run.state.addresses, run.policy),
      );
      this.running.activated(attachment);
    } catch (err) {
      if (isCancellation(err) && run.releasing()) return;
      if (isCancellation(err) && deleted()) {
        attachment.status = 'parked'; // its DEL goes on: removes it and what an attempt made
        return;
      }
      const newer = superseded();
      if (isCancellation(err) && newer) return this.supersede(attachment, newer);
      if (isCancellation(err)) throw err;
      this.park(attachment, err);
    }
  }

  /**
   * A sandbox claimed after this attachment's and waiting for its activation; in one-add-path runs
   * also one its agent already made (its ADD did not wait behind this activation).
   */
  private newerClaim(attachment: Attachment): Attachment | undefined {
    const { run } = this;
    const after = run.state.attachments.slice(run.state.attachments.indexOf(attachment) + 1);
    const newer = (a: Attachment) =>
      a.status === 'pending' || (run.patches.oneAddPath && a.status === 'active');
    return after.find(newer);
  }

  /** Left as parked (its ADD is refused; a DEL or the release removes what was made): the newer goes first. */
  private supersede(attachment: Attachment, newer: Attachment): void {
    attachment.status = 'parked';
    log.info('activation stopped: a newer sandbox of the pod was claimed', {
      containerId: attachment.containerId,
      newer: newer.containerId,
    });
  }

  /**
   * The budget is spent. The current details (markdown in the UI) lead with the cause and the
   * remedy, then say what is kept; `lastError` keeps the whole error for the CNI result.
   */
  private park(attachment: Attachment, err: unknown): void {
    const { run } = this;
    attachment.status = 'parked';
    run.state.lastError = describe(err);
    log.warn('lease parked in ActivationFailed: send the retry signal once the cause is fixed', {
      ifName: attachment.ifName,
      containerId: attachment.containerId,
      error: causeOf(err),
    });
    const kept = run.state.addresses.map((a) => `\`${a.address}/${a.prefixLength}\``).join(', ');
    const budget = run.policy ? `its budget of ${run.policy.maximumAttempts} attempts` : 'its budget';
    run.enter(
      'ActivationFailed',
      `${causeOf(err)}. Remedy: fix that, then send the \`retry\` signal (no input) to activate ` +
        `${attachment.ifName} again with a fresh budget. Activation spent ${budget}` +
        `${kept ? `; ${kept} stay reserved for the pod` : ''}.`,
    );
  }

  /** The `retry` signal: every parked attachment is activated again with a fresh budget. */
  retryParked(): void {
    const { run } = this;
    const parked = run.state.attachments.filter((a) => a.status === 'parked').length;
    log.info('retry signal received', { parked, phase: run.state.phase });
    for (const attachment of run.state.attachments)
      if (attachment.status === 'parked') attachment.status = 'pending';
  }
}
