// produce and return: the lease's reservation on its node, made at the start (or again after a
// reterm) and given back by the release. The reservation stays bound to the pod until then
// (seed 003: nothing is popped at consume).
import { isCancellation, setCurrentDetails } from '@temporalio/workflow';
import { askedAddresses, FailureType } from '../../domain/lease';
import { addressList, summary } from '../dataplane';
import { toApplicationFailure } from '../failures';
import { produceAddresses, returnAddresses } from './addresses';
import type { Running } from './running';
import type { LeaseRun } from './run';

export class Production {
  /** ADDs waiting for the addresses: Produced is then left in the same step (not listed). */
  addsWaiting = 0;

  constructor(
    private readonly run: LeaseRun,
    private readonly running: Running,
  ) {}

  /** produce: reserve the addresses for this pod. A release meanwhile cancels it. */
  async produce(): Promise<boolean> {
    const { run } = this;
    const { start } = run;
    setCurrentDetails(`Producing: reserving addresses on node ${start.nodeName}`);
    try {
      const produced = await run.cancelledByRelease(() =>
        produceAddresses(
          run.patches.oneAddPath,
          {
            summary: summary(`produce: reserve addresses from pool ${start.pool} on node ${start.nodeName}`),
          },
          {
            leaseId: run.leaseId,
            run: run.reservation,
            podUid: start.podUid,
            nodeName: start.nodeName,
            pool: start.pool,
            ...(start.staticAddresses ? { addresses: askedAddresses(start) } : {}),
            ...(start.stickyKey ? { reservation: start.stickyKey } : {}),
          },
        ),
      );
      run.state.addresses = produced.addresses;
      run.policy = produced.activation;
      // A lease started again for a pod that runs (reconciler) has its sandboxes already.
      const recovered = run.state.attachments.find((a) => a.status === 'active');
      if (recovered) this.running.activated(recovered);
      else run.enter('Produced', 'addresses reserved; waiting for a CNI ADD', this.addsWaiting === 0);
      return true;
    } catch (err) {
      if (isCancellation(err) && run.releasing()) return false;
      if (isCancellation(err)) throw err;
      run.produceFailure = toApplicationFailure(err, FailureType.invalidConfig);
      run.state.lastError = run.produceFailure.message;
      return false;
    }
  }

  /** return: the reservation goes back to its node (cooling down before it is handed out again). */
  async giveBack(): Promise<void> {
    const { run } = this;
    const { start } = run;
    await returnAddresses(
      run.patches.oneAddPath,
      {
        summary: summary(
          `return: give ${addressList(run.state.addresses) || 'the reservation'} back to pool ${start.pool}`,
        ),
      },
      { leaseId: run.leaseId, run: run.reservation, nodeName: start.nodeName, pool: start.pool },
    );
  }
}
