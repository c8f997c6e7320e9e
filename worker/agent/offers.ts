// The node agent's offers (the protocol and its decisions are in domain/offer): leases' grants held
// on disk (offer-records), so the agent answers an ADD itself and confirms it to the lease right
// after (offer-confirmer). A grant comes from the pre-producer (`hold`, before the pod's first ADD)
// or from a cold ADD's consume (`answerGrant`, the agent to make the interface). Either way the ADD
// takes it (on disk as answered), makes the interface in ptp mode, answers and confirms. If making
// it fails, the ADD asks the lease to make it: its activation retries (its steps are idempotent: a
// half-made interface is finished) and parks.
import type { Client } from '@temporalio/client';
import type { TemporalConnection } from '../../domain/config';
import type { AttachmentInput } from '../../domain/dataplane';
import { leaseWorkflowId } from '../../domain/ids';
import type { ActivatedLinks, LeaseStart, Sandbox } from '../../domain/lease';
import {
  answeredBy,
  keepsAnswer,
  offerAnswers,
  type Offer,
  type OfferAnswer,
  type OfferRecord,
} from '../../domain/offer';
import { offerEvents } from '../../observability/agent-metrics';
import { errorMessage, silentLog, type Log } from '../../observability/log';
import type { OfferAnswers } from '../../cni/commands';
import { stopActivations } from '../../activities/dataplane';
import { pauseAfter } from '../../kernel/failpoint';
import { OfferConfirmer } from './offer-confirmer';
import { attachmentInput } from './offer-input';
import { OfferRecords } from './offer-records';

export { offerFileOf } from './offer-records';

const REVOKED_REMEMBERED = 10_000;

export interface OfferBookOptions {
  dir: string;
  client: Client;
  temporal: Pick<TemporalConnection, 'address' | 'namespace'>;
  /** The agent's activation of one attachment; without it ptp grants are the lease's to make. */
  activate?: (input: AttachmentInput) => Promise<ActivatedLinks>;
  /** Its deactivation: removes the interface of an answer the lease refused. */
  deactivate?: (input: AttachmentInput) => Promise<void>;
  log?: Log;
}

export class OfferBook implements OfferAnswers {
  private readonly records: OfferRecords;
  private readonly confirmer: OfferConfirmer;
  /** `leaseId@run` revoked: a grant answered before its revocation must not be held after it. */
  private readonly revoked = new Set<string>();
  private readonly log: Log;

  private constructor(private readonly options: OfferBookOptions) {
    this.log = options.log ?? silentLog();
    this.records = new OfferRecords(options.dir, this.log);
    this.confirmer = new OfferConfirmer({
      client: options.client,
      records: this.records,
      deactivate: options.deactivate,
      log: this.log,
    });
  }

  /** The book of an earlier agent's directory: its answers are confirmed again, the rest dropped. */
  static async open(options: OfferBookOptions): Promise<OfferBook> {
    const book = new OfferBook(options);
    for (const offer of await book.records.load()) book.confirmer.confirm(offer);
    return book;
  }

  /** Holds a lease's grant (after the `offer` update); false if it was revoked meanwhile. */
  async hold(offer: OfferRecord): Promise<boolean> {
    if (this.revoked.has(`${offer.leaseId}@${offer.run}`)) return false;
    if (keepsAnswer(this.records.get(offer.leaseId), offer)) return true;
    offerEvents.inc({ event: 'held' });
    await this.records.put(offer);
    return true;
  }

  /** Whether this ADD's interface is the agent's to make (ptp, with its activation, on its Temporal). */
  makes(start: LeaseStart, temporal: Pick<TemporalConnection, 'address' | 'namespace'>): boolean {
    const held = this.records.get(leaseWorkflowId(start.podUid, start.ifName));
    return (
      start.mode === 'ptp' &&
      this.options.activate !== undefined &&
      this.sameTemporal(temporal) &&
      !held?.answered
    );
  }

  /** The offer that answers this ADD, on disk as answered; undefined: the ADD asks the lease. */
  async take(
    start: LeaseStart,
    sandbox: Sandbox,
    temporal: Pick<TemporalConnection, 'address' | 'namespace'>,
  ): Promise<OfferRecord | undefined> {
    const leaseId = leaseWorkflowId(start.podUid, start.ifName);
    const offer = this.records.get(leaseId);
    if (!offer || !this.sameTemporal(temporal) || !offerAnswers(offer, start, sandbox)) return undefined;
    if (offer.start.mode === 'ptp' && !this.options.activate) return undefined;
    if (offer.answered) {
      await this.records.written(leaseId); // the runtime repeated the ADD: the same answer, once on disk
      return this.records.get(leaseId) === offer ? offer : undefined;
    }
    // On disk before the interface is made: after a crash from here on, the lease finishes it.
    const claimed = answeredBy(offer, sandbox);
    if (!(await this.records.replace(offer, claimed))) return undefined;
    return this.answered(offer, claimed);
  }

  /**
   * A cold ADD's grant, the agent to make the interface (a consume `madeBy` the agent): held as an
   * offer answered for this sandbox, then made and confirmed as `take` does. Undefined: the ADD asks
   * the lease (revoked meanwhile, another answer held, or the interface could not be made).
   */
  async answerGrant(grant: Offer & { leaseId: string }, sandbox: Sandbox): Promise<OfferRecord | undefined> {
    const offer: OfferRecord = {
      leaseId: grant.leaseId,
      run: grant.run,
      start: grant.start,
      addresses: grant.addresses,
    };
    if (this.revoked.has(`${offer.leaseId}@${offer.run}`) || this.records.get(offer.leaseId)?.answered)
      return undefined;
    const claimed = answeredBy(offer, sandbox);
    offerEvents.inc({ event: 'held' });
    try {
      await this.records.put(claimed);
    } catch (err) {
      this.log.warn(
        { leaseId: offer.leaseId, error: errorMessage(err) },
        'offer: cannot write; asking the lease',
      );
      await this.records.forget(claimed);
      return undefined;
    }
    return this.answered(offer, claimed);
  }

  /** The answer once made (ptp) and on disk, its confirmation under way; undefined: not answered. */
  private async answered(offer: OfferRecord, claimed: OfferRecord): Promise<OfferRecord | undefined> {
    await pauseAfter('offer-written'); // test-only (the soak): a crash or a revocation from here
    const answered = offer.start.mode === 'ptp' ? await this.made(offer, claimed) : claimed;
    if (!answered) return undefined;
    offerEvents.inc({ event: 'answered' });
    this.confirmer.confirm(answered);
    return answered;
  }

  /**
   * Makes the interface (ptp): the answer with its links, or undefined with the grant held again,
   * unanswered. A revocation stops it (activities/attachment-locks) and hands the sandbox to the
   * release.
   */
  private async made(offer: OfferRecord, claimed: OfferRecord): Promise<OfferRecord | undefined> {
    // Revoked since it was claimed: nothing to make. From here to the activation's place in the
    // attachment's queue nothing awaits, so a later revocation finds it there and stops it.
    if (this.records.get(claimed.leaseId) !== claimed) return undefined;
    try {
      const links = await this.activate(attachmentInput(claimed));
      const answered = { ...claimed, answered: { ...(claimed.answered as OfferAnswer), links } };
      // Not waited for: the answer is on disk already, and one confirmed without its links after a
      // crash is an attachment the lease's activation finishes (its steps are idempotent).
      return this.records.swap(claimed, answered) ? answered : undefined;
    } catch (err) {
      this.log.warn(
        { leaseId: claimed.leaseId, error: errorMessage(err) },
        'offer: activation failed; asking the lease',
      );
      await this.records.replace(claimed, offer);
      return undefined;
    }
  }

  private activate(input: AttachmentInput): Promise<ActivatedLinks> {
    const { activate } = this.options;
    if (!activate) throw new Error('no activation in this agent');
    return activate(input);
  }

  /**
   * Ends the offer of this run; the ADD answered from it, if any (the revokeOffer activity). An
   * activation of that answer still in flight stops and is undone first: the lease deactivates
   * the sandbox next, and must find nothing being made behind it.
   */
  async revoke(leaseId: string, run: string): Promise<OfferAnswer | undefined> {
    this.rememberRevoked(`${leaseId}@${run}`);
    const offer = this.records.get(leaseId);
    if (offer?.run !== run) return undefined;
    offerEvents.inc({ event: 'revoked' });
    // Test-only (the soak): decided, not yet on disk; in the lease's write queue, so order holds.
    await this.records.remove(leaseId, () => pauseAfter('offer-revoked'));
    if (offer.answered && offer.start.mode === 'ptp') await stopActivations(offer.answered);
    return offer.answered;
  }

  /** Once an answer of this lease is confirmed to the workflow (DEL, CHECK wait); rejects when `until` fires. */
  settled(leaseId: string, until?: AbortSignal): Promise<void> {
    return this.confirmer.settled(leaseId, until);
  }

  allSettled(until?: AbortSignal): Promise<void> {
    return this.confirmer.allSettled(until);
  }

  close(): void {
    this.confirmer.close();
  }

  private sameTemporal(temporal: Pick<TemporalConnection, 'address' | 'namespace'>): boolean {
    const own = this.options.temporal;
    return temporal.address === own.address && temporal.namespace === own.namespace;
  }

  private rememberRevoked(key: string): void {
    this.revoked.add(key);
    if (this.revoked.size > REVOKED_REMEMBERED)
      this.revoked.delete(this.revoked.values().next().value as string);
  }
}
