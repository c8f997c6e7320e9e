// The node agent confirms each answer to its lease (the confirmAnswer update) until the lease takes
// it or refuses it. Until then the answered record stays, on disk too, so an agent stopped meanwhile
// asks again at its start; a DEL, CHECK or GC of the lease waits for it (settled).
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { AttachmentInput } from '../../domain/dataplane';
import { confirmAnswerUpdateId } from '../../domain/ids';
import { afterConfirm, confirmationOf, type ConfirmOutcome, type OfferRecord } from '../../domain/offer';
import { offerEvents } from '../../observability/agent-metrics';
import { errorMessage, type Log } from '../../observability/log';
import { isGoneError, isUpdateRefusal } from '../../temporal/workflow-gone';
import { confirmAnswerUpdate } from '../../workflows/lease-messages';
import { attachmentInput } from './offer-input';
import type { OfferRecords } from './offer-records';

const CONFIRM_DEADLINE_MS = 10_000;

/** `pending` settled, or `until`'s reason once it fires first (its listener goes with the signal). */
async function settledOrAborted(pending: Promise<unknown> | undefined, until?: AbortSignal): Promise<void> {
  if (!pending || !until) return void (await pending);
  until.throwIfAborted();
  const aborted = once(until, 'abort').then(() => Promise.reject(until.reason));
  await Promise.race([pending, aborted]);
}

export interface OfferConfirmerOptions {
  client: Client;
  records: OfferRecords;
  /** Removes the interface of an answer the lease did not keep (ptp). */
  deactivate?: (input: AttachmentInput) => Promise<void>;
  log: Log;
}

export class OfferConfirmer {
  private readonly confirming = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();

  constructor(private readonly options: OfferConfirmerOptions) {}

  /** Confirms the answer in the background until the lease takes or refuses it. */
  confirm(offer: OfferRecord): void {
    const confirmed = this.untilSettled(offer).finally(() => {
      if (this.confirming.get(offer.leaseId) === confirmed) this.confirming.delete(offer.leaseId);
    });
    this.confirming.set(offer.leaseId, confirmed);
  }

  /** Resolves once an answer of this lease is confirmed; rejects when `until` fires first. */
  async settled(leaseId: string, until?: AbortSignal): Promise<void> {
    await settledOrAborted(this.confirming.get(leaseId), until);
  }

  async allSettled(until?: AbortSignal): Promise<void> {
    await settledOrAborted(Promise.all(this.confirming.values()), until);
  }

  close(): void {
    this.closing.abort();
  }

  /**
   * A refused answer's interface is removed before its record goes: the lease did not keep the
   * sandbox (one that is releasing may deactivate it too; removing twice is harmless).
   */
  private async untilSettled(offer: OfferRecord): Promise<void> {
    let outcome: ConfirmOutcome = 'later';
    for (let waitMs = 100; !this.closing.signal.aborted; waitMs = Math.min(waitMs * 2, 5000)) {
      if (outcome === 'later') outcome = await this.confirmOnce(offer);
      const next = afterConfirm(outcome, offer);
      if (next === 'forget' || (next === 'undo' && (await this.removedInterface(offer)))) {
        await this.options.records.forget(offer);
        offerEvents.inc({ event: outcome === 'gone' ? 'refused' : outcome }); // either way not taken
        return;
      }
      await sleep(waitMs, undefined, { signal: this.closing.signal }).catch(() => undefined);
    }
  }

  /** Removes the interface made for a refused answer; false: it could not, try again. */
  private async removedInterface(offer: OfferRecord): Promise<boolean> {
    const { deactivate, log } = this.options;
    if (!deactivate) return true;
    const fields = { leaseId: offer.leaseId, containerId: offer.answered?.containerId };
    try {
      await deactivate(attachmentInput(offer));
      log.info(fields, 'offer: removed the interface of the refused answer');
      return true;
    } catch (err) {
      log.warn({ ...fields, error: errorMessage(err) }, 'offer: cannot remove the refused answer yet');
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
    const { client, log } = this.options;
    const answer = confirmationOf(offer);
    const confirm = (run?: string) =>
      client.connection.withDeadline(Date.now() + CONFIRM_DEADLINE_MS, () =>
        client.workflow.getHandle(offer.leaseId, run).executeUpdate(confirmAnswerUpdate, {
          args: [answer],
          updateId: confirmAnswerUpdateId(answer.containerId, answer.ifName, run ?? `latest-${offer.run}`),
        }),
      );
    try {
      await confirm(offer.run).catch((err: unknown) => {
        if (!isGoneError(err)) throw err;
        return confirm(); // its run closed: the lease's run now, if one is open
      });
      return 'confirmed';
    } catch (err) {
      const fields = { leaseId: offer.leaseId, containerId: answer.containerId, error: errorMessage(err) };
      if (isUpdateRefusal(err)) {
        log.warn(fields, 'offer: the lease refused the answer (it ended first)');
        return 'refused';
      }
      if (isGoneError(err)) {
        log.warn(fields, 'offer: the lease is gone (it closed before the answer was confirmed)');
        return 'gone';
      }
      // The agent stopping: the answer stays on disk, and the next agent confirms it.
      if (this.closing.signal.aborted) log.info(fields, 'offer: confirmation left to the next agent');
      else log.warn(fields, 'offer: confirming; will retry');
      return 'later';
    }
  }
}
