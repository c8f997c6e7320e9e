// What the lease undoes on its node: an attachment's interface (a CNI DEL, or the release), and the
// node agent's offer (before the addresses go back; an ADD answered from it comes back as an
// attachment). Each retries for an hour, then gives up: a node gone that long is compensated.
import { condition, isCancellation, patched } from '@temporalio/workflow';
import type { Attachment, DeactivateRequest, Sandbox } from '../../domain/lease';
import type { OfferAnswer } from '../../domain/offer';
import { deactivateOnNode, revokeOfferOnNode } from '../dataplane';
import { describe } from '../failures';
import { COMMANDS_AT_JOB, DEL_STOPS_ACTIVATION } from './patches';
import type { LeaseRun } from './run';

export class Deactivation {
  /** A later release said the node is gone: deactivations waiting on its agent are dropped. */
  nodeGoneLater = false;

  constructor(private readonly run: LeaseRun) {}

  /** A CNI DEL: only this sandbox's attachment ends; the addresses stay with the pod. */
  async deactivateSandbox(request: DeactivateRequest): Promise<boolean> {
    const { run } = this;
    const attachment = run.attachmentOf(request);
    if (!attachment) return false;
    // Waits only for an activation in flight (which the DEL stops), so the deactivation is
    // scheduled in the update's own job.
    if (attachment.status === 'activating' && patched(DEL_STOPS_ACTIVATION))
      run.deletedWhileActivating.add(attachment);
    if (attachment.status === 'activating' || !run.patches.has(COMMANDS_AT_JOB))
      await condition(() => attachment.status !== 'activating');
    run.deletedWhileActivating.delete(attachment);
    run.state.attachments = run.state.attachments.filter((a) => a !== attachment);
    await this.deactivate(attachment);
    if (!run.releasing() && !run.state.attachments.some((a) => a.status === 'active')) {
      run.enter('Produced', 'sandbox deleted; address held for the pod until it is gone');
    }
    return true;
  }

  /** Every attachment, including one taken in while this runs (skipped when the node is gone). */
  async deactivateAll(nodeGone: boolean | undefined): Promise<void> {
    if (!nodeGone) for (const attachment of this.run.state.attachments) await this.deactivate(attachment);
    this.run.state.attachments = [];
  }

  /** The agent's offer ends before the addresses go back; an ADD it answered becomes an attachment. */
  async revokeOffer(): Promise<void> {
    const { run } = this;
    try {
      const answered = await run.cancelledWhen(
        () => this.nodeGoneLater,
        () => revokeOfferOnNode(run.start, run.leaseId, run.runId),
      );
      if (answered && !run.attachmentOf(answered))
        run.state.attachments.push(attachmentFor(answered, 'active'));
    } catch (err) {
      if (isCancellation(err) && !this.nodeGoneLater) throw err;
      run.state.lastError = isCancellation(err)
        ? "revoking the node agent's offer dropped: the node is gone"
        : `revoking the node agent's offer gave up: ${describe(err)}`;
    }
    run.offered = false;
  }

  /** A node that stays unreachable past the deactivation budget must not wedge DEL or release. */
  private async deactivate(attachment: Attachment): Promise<void> {
    const { run } = this;
    const which = `${attachment.ifName} of ${attachment.containerId.slice(0, 12)}`;
    try {
      await run.cancelledWhen(
        () => this.nodeGoneLater,
        () => deactivateOnNode(run.start, attachment, run.state.addresses),
      );
    } catch (err) {
      if (isCancellation(err) && this.nodeGoneLater) {
        run.state.lastError = `deactivating ${which} dropped: the node is gone`;
        return;
      }
      if (isCancellation(err)) throw err;
      run.state.lastError = `deactivating ${which} gave up: ${describe(err)}`;
    }
  }
}

/** The sandbox of an ADD as the lease keeps it. */
export function attachmentFor(
  sandbox: Sandbox & Partial<Pick<OfferAnswer, 'links'>>,
  status: Attachment['status'],
): Attachment {
  const { containerId, netns, ifName, routes, links } = sandbox;
  return { containerId, netns, ifName, status, ...(routes ? { routes } : {}), ...(links ? { links } : {}) };
}
