// reterm: a lease produced on a guess nobody was told (the node agent's pre-produce settings) gives
// way to an ADD of other terms (network, mode, pool, node): the offer is revoked, the guessed
// addresses go back, and the lease is produced again on the ADD's terms. An offer answered meanwhile
// means a runtime was told: then the ADD is refused, as any ADD of other terms is once told.
import { log, upsertSearchAttributes } from '@temporalio/workflow';
import { FailureType, termsMismatch, termsText, type LeaseTerms } from '../../domain/lease';
import { NodeName } from '../../domain/search-attributes';
import type { Deactivation } from './deactivation';
import type { Production } from './production';
import { PRODUCE_AGAIN_AFTER_FAILED_GUESS } from './patches';
import { failure, type LeaseRun } from './run';

export class Reterm {
  private reterms = 0;
  /** Withdrawals of a guess, one after another. */
  private reterming: Promise<void> = Promise.resolve();

  constructor(
    private readonly run: LeaseRun,
    private readonly production: Production,
    private readonly deactivation: Deactivation,
  ) {}

  /** The guess gives way to the ADD's terms, once per difference (concurrent ADDs queue). */
  toTerms(terms: LeaseTerms): Promise<void> {
    this.reterming = this.reterming.catch(() => undefined).then(() => this.withdrawGuess(terms));
    return this.reterming;
  }

  private async withdrawGuess(terms: LeaseTerms): Promise<void> {
    const { run } = this;
    await run.until(() => run.state.addresses.length > 0 || run.isOver());
    if (this.mayProduceAgain()) return this.produceAgain(terms);
    if (run.isOver() || !termsMismatch(run.start, terms)) return;
    const was = termsText(run.start);
    if (run.offered) await this.deactivation.revokeOffer();
    const mismatch = termsMismatch(run.start, terms);
    if (run.state.told && mismatch) throw failure(mismatch, FailureType.termsMismatch);
    run.enter(
      'Producing',
      `withdrawing the guess (${was}): an ADD asks for ${termsText({ ...run.start, ...terms })}`,
    );
    await this.production.giveBack();
    run.state.addresses = [];
    await this.produceOn(terms);
    log.info('pre-produced guess withdrawn', { was, now: termsText(run.start) });
  }

  /**
   * A withdrawn guess whose produce failed (its ADD got the error) holds nothing and told nobody:
   * the next ADD is a retry, on its own terms (the Node may exist by now, or the ADD names another).
   */
  mayProduceAgain(): boolean {
    const { run } = this;
    const failedGuess = run.produceFailure !== undefined && this.reterms > 0 && !run.state.told;
    return (
      failedGuess &&
      !run.releaseStarted &&
      !run.releasing() &&
      run.patches.has(PRODUCE_AGAIN_AFTER_FAILED_GUESS)
    );
  }

  private async produceAgain(terms: LeaseTerms): Promise<void> {
    const { run } = this;
    const failed = run.produceFailure?.message ?? '';
    run.produceFailure = undefined;
    run.enter(
      'Producing',
      `an ADD asks for ${termsText({ ...run.start, ...terms })} (the last produce failed: ${failed})`,
    );
    await this.produceOn(terms);
  }

  /** The lease's terms become the ADD's, reserved under a key of their own. */
  private async produceOn(terms: LeaseTerms): Promise<void> {
    const { run } = this;
    // Static addresses (and their sticky key) are the ADD's too: an ADD without them keeps none of the guess's.
    const unfixed = { ...run.start };
    delete unfixed.staticAddresses;
    delete unfixed.stickyKey;
    run.state.start = { ...unfixed, ...terms };
    upsertSearchAttributes([{ key: NodeName, value: run.start.nodeName }]);
    run.reservation = `${run.runId}~${++this.reterms}`;
    await this.production.produce();
  }
}
