// The ADD, on one path: the node agent gets the grant once the addresses are produced, makes the
// interface itself, answers the runtime, and confirms the answer to the lease, which records what
// it was told. Two ways to the grant:
//   offer    (pre-produced): the agent holds the grant before the ADD (domain/offer);
//   consume  (cold): the ADD's update-with-start; the agent that makes the interface (ptp) gets the
//            grant as an offer already answered; nothing to make (ipam): the attachment is active;
//   confirmAnswer: the answered sandbox becomes the lease's active attachment.
// A consume that asks the lease to make the interface (the agent could not, or an older caller)
// claims the sandbox for the lease's own activation (workflows/lease/activation) and waits for it.
import {
  FailureType,
  termsMismatch,
  type Attachment,
  type ConsumeRequest,
  type LeaseGrant,
  type Sandbox,
} from '../../domain/lease';
// Types only: every module the bundle evaluates costs heap in each cached workflow (its own copy).
import type { Offer, OfferAnswer } from '../../domain/offer';
import { attachmentFor } from './deactivation';
import { ANSWER_INTO_RELEASE } from './patches';
import type { Production } from './production';
import type { Reterm } from './reterm';
import type { Running } from './running';
import { failure, type LeaseRun } from './run';

export class Grants {
  constructor(
    private readonly run: LeaseRun,
    private readonly production: Production,
    private readonly reterm: Reterm,
    private readonly running: Running,
  ) {}

  /**
   * An ADD of another network, mode, pool or node than the lease's: refused before it is admitted
   * (no event) once a runtime was told the lease's addresses; until then the lease's terms were a
   * guess (pre-produced), which gives way (reterm).
   */
  refuseOtherTerms(request: ConsumeRequest): void {
    const mismatch = termsMismatch(this.run.start, request.terms);
    if (mismatch && this.run.state.told) throw failure(mismatch, FailureType.termsMismatch);
  }

  /** consume: a CNI ADD, once the addresses are produced (on the ADD's terms). */
  async consume(request: ConsumeRequest): Promise<LeaseGrant> {
    const { run } = this;
    if (termsMismatch(run.start, request.terms) || this.reterm.mayProduceAgain())
      await this.reterm.toTerms(request.terms);
    this.production.addsWaiting++;
    try {
      await run.produced();
    } finally {
      this.production.addsWaiting--;
    }
    run.state.told = true;
    if (request.madeBy === 'agent' && run.start.mode === 'ptp' && run.patches.oneAddPath)
      return this.grantToAgent(request);
    const attachment = this.claim(request);
    await run.until(
      () => attachment.status === 'active' || attachment.status === 'parked' || run.releasing(),
    );
    if (attachment.status !== 'active') {
      throw failure(
        `activation failed: ${run.state.lastError ?? run.state.phase}`,
        FailureType.activationFailed,
      );
    }
    return run.grantFor(attachment);
  }

  /**
   * The agent makes the interface and confirms its answer, as one answered from an offer: the grant
   * names this run, whose offer the release revokes first. An attachment already active is the
   * answer to a repeated ADD.
   */
  private grantToAgent(sandbox: Sandbox): LeaseGrant {
    const { run } = this;
    const same = run.attachmentOf(sandbox);
    if (same?.status === 'active') return run.grantFor(same);
    run.offered = true;
    return { ...run.grantFor(attachmentFor(sandbox, 'pending')), run: run.runId };
  }

  /**
   * offer: the node agent holds the grant on disk to answer the pod's first ADD (domain/offer); it
   * gets the lease's own start, so it answers only an ADD of the lease's terms.
   */
  async offer(): Promise<Offer> {
    const { run } = this;
    await run.produced();
    run.offered = true;
    return { run: run.runId, start: run.start, addresses: run.state.addresses };
  }

  /** confirmAnswer: the agent answered an ADD from its offer; its sandbox is an active attachment. */
  async confirmAnswer(answer: OfferAnswer): Promise<LeaseGrant> {
    const { run } = this;
    run.offered = false; // spent
    try {
      await run.produced();
    } catch (err) {
      // Released meanwhile: the interface the agent made is the release's to remove.
      if (run.releasing() && run.patches.has(ANSWER_INTO_RELEASE) && !run.attachmentOf(answer))
        run.state.attachments.push(attachmentFor(answer, 'active'));
      throw err;
    }
    const held = run.state.addresses.map((a) => a.address);
    if (answer.addresses && answer.addresses.join() !== held.join())
      throw failure(
        `the answer told ${answer.addresses.join(', ')}; this lease holds ${held.join(', ')}`,
        FailureType.conflict,
      );
    run.state.told = true;
    const attachment = this.claim(answer);
    // The agent made the interface (ptp) or there is none to make (ipam): nothing left to run.
    if (attachment.status === 'pending' && (answer.links || run.start.mode === 'ipam')) {
      attachment.links = answer.links;
      this.running.activated(attachment);
    }
    return run.grantFor(attachment);
  }

  /** The sandbox's attachment; a repeated ADD of a parked one is a retry. */
  private claim(sandbox: Sandbox): Attachment {
    const { run } = this;
    const same = run.attachmentOf(sandbox);
    if (same) {
      if (same.status === 'parked') same.status = 'pending';
      return same;
    }
    const attachment = attachmentFor(sandbox, 'pending');
    run.state.attachments.push(attachment);
    // Active or Activating follows: listed only by runs before the one ADD path.
    run.enter('Consumed', `claimed by sandbox ${sandbox.containerId.slice(0, 12)}`, false);
    return attachment;
  }
}
