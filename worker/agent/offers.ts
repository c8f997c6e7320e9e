// The node agent's offers (the protocol is in domain/offer): pre-produced grants held on disk, one
// file per lease, so the pod's first ADD is answered from here and confirmed to the lease workflow
// right after (the confirmAnswer update). All
// decisions are taken in memory first (one process: an answer and a revocation never both win),
// then written in the same order per lease; the answer goes out only once its record is on disk.
// In ptp mode the agent makes the interface itself first; if that fails, the ADD takes the lease's
// path, whose activation retries (its steps are idempotent: a half-made interface is finished).
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { TemporalConnection } from '../../domain/config';
import { confirmAnswerUpdateId, leaseWorkflowId } from '../../domain/ids';
import type { AttachmentInput } from '../../domain/dataplane';
import type { ActivatedLinks, LeaseStart, Sandbox } from '../../domain/lease';
import { routesFor } from '../../domain/routes';
import { offerAnswers, OfferRecordSchema, type OfferAnswer, type OfferRecord } from '../../domain/offer';
import { offerEvents, offersHeld } from '../../observability/agent-metrics';
import { errorMessage, silentLog, type Log } from '../../observability/log';
import { durableFiles, readDurableAs, removeDurably, writeDurably } from '../../storage/durable-files';
import { isGoneError, isUpdateRefusal } from '../../temporal/workflow-gone';
import type { OfferAnswers } from '../../cni/commands';
import { confirmAnswerUpdate } from '../../workflows/lease-messages';
import { stopActivations } from '../../activities/dataplane';
import { pauseAfter } from '../../kernel/failpoint';

/** The file of a lease's offer in the agent's offer directory (the bench waits on it too). */
export const offerFileOf = (leaseId: string): string => `${encodeURIComponent(leaseId)}.json`;

/** `pending` settled, or `until`'s reason once it fires first (its listener goes with the signal). */
async function settledOrAborted(pending: Promise<unknown> | undefined, until?: AbortSignal): Promise<void> {
  if (!pending || !until) return void (await pending);
  until.throwIfAborted();
  const aborted = once(until, 'abort').then(() => Promise.reject(until.reason));
  await Promise.race([pending, aborted]);
}

/** What the lease made of an answer: took it, refused it, is gone, or has not said (asked again later). */
type ConfirmOutcome = 'confirmed' | 'refused' | 'gone' | 'later';

/** The dataplane's input for the sandbox an offer answered. */
function attachmentInput(offer: OfferRecord): AttachmentInput {
  const { containerId, netns, ifName, routes } = offer.answered as OfferAnswer;
  return {
    leaseId: offer.leaseId,
    start: offer.start,
    attachment: { containerId, netns, ifName },
    addresses: offer.addresses,
    routes: routesFor(offer.addresses, routes),
  };
}

const REVOKED_REMEMBERED = 10_000;
const CONFIRM_DEADLINE_MS = 10_000;

export interface OfferBookOptions {
  dir: string;
  client: Client;
  temporal: Pick<TemporalConnection, 'address' | 'namespace'>;
  /** The agent's activation of one attachment; without it ptp offers answer nothing. */
  activate?: (input: AttachmentInput) => Promise<ActivatedLinks>;
  /** Its deactivation: removes the interface of an answer the lease refused. */
  deactivate?: (input: AttachmentInput) => Promise<void>;
  log?: Log;
}

export class OfferBook implements OfferAnswers {
  private readonly records = new Map<string, OfferRecord>();
  private readonly writes = new Map<string, Promise<void>>();
  private readonly confirming = new Map<string, Promise<void>>();
  /** `leaseId@run` revoked: an offer update answered before its revocation must not be held after it. */
  private readonly revoked = new Set<string>();
  private readonly closing = new AbortController();
  private readonly log: Log;

  private constructor(private readonly options: OfferBookOptions) {
    this.log = options.log ?? silentLog();
  }

  /**
   * Answered offers are confirmed again (the crash may have come first); unanswered ones are
   * dropped: the pre-producer offers them anew, so none outlives a revocation that gave up.
   */
  static async open(options: OfferBookOptions): Promise<OfferBook> {
    const book = new OfferBook(options);
    for (const name of await durableFiles(options.dir, '.json')) {
      const offer = await readDurableAs(options.dir, name, OfferRecordSchema).catch((err: unknown) => {
        // EIO, EMFILE...: not damaged, so kept on disk for the next start to read.
        book.log.warn(
          { file: name, error: errorMessage(err) },
          'offer file cannot be read now; left as it is',
        );
        return null;
      });
      if (offer === null) continue;
      if (offer?.answered) {
        book.records.set(offer.leaseId, offer);
        book.confirm(offer);
      } else {
        // Unanswered, or unreadable; one that cannot even be removed must not stop the agent.
        await removeDurably(options.dir, name).catch((err: unknown) =>
          book.log.warn(
            { file: name, error: errorMessage(err) },
            'offer file cannot be removed; left as it is',
          ),
        );
      }
    }
    book.count();
    return book;
  }

  /** Holds a lease's grant (after the `offer` update); false if it was revoked meanwhile. */
  async hold(offer: OfferRecord): Promise<boolean> {
    if (this.revoked.has(`${offer.leaseId}@${offer.run}`)) return false;
    const current = this.records.get(offer.leaseId);
    if (current?.run === offer.run && current.answered) return true; // answered: keep the answer
    this.records.set(offer.leaseId, offer);
    this.count('held');
    await this.persist(offer.leaseId, offer);
    return true;
  }

  /** The offer that answers this ADD, on disk as answered; undefined: take the workflow's path. */
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
      await this.writes.get(leaseId); // the runtime repeated the ADD: the same answer, once on disk
      return this.records.get(leaseId) === offer ? offer : undefined;
    }
    const { containerId, netns, ifName, routes } = sandbox;
    const claimed: OfferRecord = {
      ...offer,
      answered: { containerId, netns, ifName, ...(routes && { routes }) },
    };
    // On disk before the interface is made: after a crash from here on, the lease finishes it.
    if (!(await this.replace(offer, claimed))) return undefined;
    await pauseAfter('offer-written'); // test-only (the soak): a crash or a revocation from here
    const answered = offer.start.mode === 'ptp' ? await this.activated(offer, claimed) : claimed;
    if (!answered) return undefined;
    this.count('answered');
    this.confirm(answered);
    return answered;
  }

  /**
   * Makes the interface (ptp): the answer with its links, or undefined with the offer held again.
   * A revocation stops it (activities/attachment-locks) and hands the sandbox to the release.
   */
  private async activated(offer: OfferRecord, claimed: OfferRecord): Promise<OfferRecord | undefined> {
    // Revoked since it was claimed: nothing to make. From here to the activation's place in the
    // attachment's queue nothing awaits, so a later revocation finds it there and stops it.
    if (this.records.get(claimed.leaseId) !== claimed) return undefined;
    try {
      const links = await this.activate(attachmentInput(claimed));
      const answer = claimed.answered as OfferAnswer;
      const answered = { ...claimed, answered: { ...answer, links } };
      return (await this.replace(claimed, answered)) ? answered : undefined;
    } catch (err) {
      this.log.warn(
        { leaseId: claimed.leaseId, error: errorMessage(err) },
        'offer: activation failed; asking the lease',
      );
      await this.replace(claimed, offer);
      return undefined;
    }
  }

  private activate(input: AttachmentInput): Promise<ActivatedLinks> {
    const { activate } = this.options;
    if (!activate) throw new Error('no activation in this agent');
    return activate(input);
  }

  /** `next` in place of `current`, in memory then on disk; false if `current` was revoked or not written. */
  private async replace(current: OfferRecord, next: OfferRecord): Promise<boolean> {
    const { leaseId } = current;
    if (this.records.get(leaseId) !== current) return false;
    this.records.set(leaseId, next);
    try {
      await this.persist(leaseId, next);
      return this.records.get(leaseId) === next;
    } catch (err) {
      if (this.records.get(leaseId) === next) this.records.set(leaseId, current);
      this.log.warn({ leaseId, error: errorMessage(err) }, 'offer: cannot write; asking the lease');
      return false;
    }
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
    this.records.delete(leaseId);
    this.count('revoked');
    // Test-only (the soak): decided, not yet on disk; in the lease's write queue, so order holds.
    await this.persist(leaseId, undefined, () => pauseAfter('offer-revoked'));
    if (offer.answered && offer.start.mode === 'ptp') await stopActivations(offer.answered);
    return offer.answered;
  }

  /**
   * Resolves once an answer from this lease's offer is confirmed to the workflow (DEL, CHECK wait);
   * rejects when `until` fires first (the call's deadline).
   */
  async settled(leaseId: string, until?: AbortSignal): Promise<void> {
    await settledOrAborted(this.confirming.get(leaseId), until);
  }

  async allSettled(until?: AbortSignal): Promise<void> {
    await settledOrAborted(Promise.all(this.confirming.values()), until);
  }

  close(): void {
    this.closing.abort();
  }

  private sameTemporal(temporal: Pick<TemporalConnection, 'address' | 'namespace'>): boolean {
    return (
      temporal.address === this.options.temporal.address &&
      temporal.namespace === this.options.temporal.namespace
    );
  }

  /** Writes (or removes) a lease's file after the ones before it, in the order decided. */
  private persist(
    leaseId: string,
    offer: OfferRecord | undefined,
    before: () => Promise<void> = () => Promise.resolve(),
  ): Promise<void> {
    const { dir } = this.options;
    const write = (this.writes.get(leaseId) ?? Promise.resolve())
      .catch(() => undefined)
      .then(before)
      .then(() =>
        offer
          ? writeDurably(dir, offerFileOf(leaseId), JSON.stringify(offer))
          : removeDurably(dir, offerFileOf(leaseId)),
      );
    this.writes.set(leaseId, write);
    void write
      .finally(() => {
        if (this.writes.get(leaseId) === write) this.writes.delete(leaseId);
      })
      .catch(() => undefined);
    return write;
  }

  /** Confirms the answer with the confirmAnswer update until the workflow takes or refuses it. */
  private confirm(offer: OfferRecord): void {
    const confirmed = this.confirmUntilSettled(offer).finally(() => {
      if (this.confirming.get(offer.leaseId) === confirmed) this.confirming.delete(offer.leaseId);
    });
    this.confirming.set(offer.leaseId, confirmed);
  }

  /**
   * A refused answer's interface is removed before its record goes: the lease did not keep the
   * sandbox (one that is releasing may deactivate it too; removing twice is harmless). Until then
   * the record stays, on disk too, so an agent stopped meanwhile asks again at its start.
   */
  private async confirmUntilSettled(offer: OfferRecord): Promise<void> {
    let outcome: ConfirmOutcome = 'later';
    for (let waitMs = 100; !this.closing.signal.aborted; waitMs = Math.min(waitMs * 2, 5000)) {
      if (outcome === 'later') outcome = await this.confirmOnce(offer);
      if (outcome === 'confirmed' || (outcome !== 'later' && (await this.removedInterface(offer)))) {
        if (this.records.get(offer.leaseId) === offer) {
          this.records.delete(offer.leaseId);
          await this.persist(offer.leaseId, undefined).catch(() => undefined);
        }
        this.count(outcome === 'gone' ? 'refused' : outcome); // either way the lease did not take it
        return;
      }
      await sleep(waitMs, undefined, { signal: this.closing.signal }).catch(() => undefined);
    }
  }

  /** Removes the interface made for a refused answer (ptp); false: it could not, try again. */
  private async removedInterface(offer: OfferRecord): Promise<boolean> {
    const { deactivate } = this.options;
    if (offer.start.mode !== 'ptp' || !deactivate) return true;
    const answered = offer.answered as OfferAnswer;
    const fields = { leaseId: offer.leaseId, containerId: answered.containerId };
    try {
      await deactivate(attachmentInput(offer));
      this.log.info(fields, 'offer: removed the interface of the refused answer');
      return true;
    } catch (err) {
      this.log.warn({ ...fields, error: errorMessage(err) }, 'offer: cannot remove the refused answer yet');
      return false;
    }
  }

  /**
   * The lease took the answer, refused it, is gone, or has not answered (asked again later). The
   * run the offer came from may have closed while the lease lives on in another run (an operator's
   * reset; the reconciler starting a terminated lease again for its running pod): that run is
   * asked next, with the answer's addresses, which it takes only if they are its own.
   */
  private async confirmOnce(offer: OfferRecord): Promise<ConfirmOutcome> {
    const answered = offer.answered as OfferAnswer;
    const { client } = this.options;
    const confirm = (run?: string) =>
      client.connection.withDeadline(Date.now() + CONFIRM_DEADLINE_MS, () =>
        client.workflow.getHandle(offer.leaseId, run).executeUpdate(confirmAnswerUpdate, {
          args: [{ ...answered, addresses: offer.addresses.map((a) => a.address) }],
          updateId: confirmAnswerUpdateId(
            answered.containerId,
            answered.ifName,
            run ?? `latest-${offer.run}`,
          ),
        }),
      );
    try {
      await confirm(offer.run).catch((err: unknown) => {
        if (!isGoneError(err)) throw err;
        return confirm(); // its run closed: the lease's run now, if one is open
      });
      return 'confirmed';
    } catch (err) {
      const fields = { leaseId: offer.leaseId, containerId: answered.containerId, error: errorMessage(err) };
      if (isUpdateRefusal(err)) {
        this.log.warn(fields, 'offer: the lease refused the answer (it ended first)');
        return 'refused';
      }
      if (isGoneError(err)) {
        this.log.warn(fields, 'offer: the lease is gone (it closed before the answer was confirmed)');
        return 'gone';
      }
      // The agent stopping: the answer stays on disk, and the next agent confirms it.
      if (this.closing.signal.aborted) this.log.info(fields, 'offer: confirmation left to the next agent');
      else this.log.warn(fields, 'offer: confirming; will retry');
      return 'later';
    }
  }

  private rememberRevoked(key: string): void {
    this.revoked.add(key);
    if (this.revoked.size > REVOKED_REMEMBERED)
      this.revoked.delete(this.revoked.values().next().value as string);
  }

  private count(event?: 'held' | 'answered' | 'confirmed' | 'refused' | 'revoked'): void {
    if (event) offerEvents.inc({ event });
    offersHeld.set(this.records.size);
  }
}
