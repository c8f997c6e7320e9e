// lease/<podUID>/<ifName>: one pod interface from produce to release. The reservation made at
// produce time stays bound to the pod until release (seed 003: nothing is popped at consume).
// By concern: lease/production.ts (produce, return), lease/grant.ts (the ADD: offer, consume,
// confirmAnswer), lease/activation.ts (the lease's own activation: retries, parked leases),
// lease/running.ts (confirm-running, Stalled), lease/release.ts, lease/deactivation.ts (DEL, what
// the release undoes on the node), lease/reterm.ts (a guess giving way), lease/run.ts (their state),
// lease/patches.ts (the versions whose histories replay).
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  setHandler,
} from '@temporalio/workflow';
import {
  ActivatedLinksSchema,
  ConsumeSchema,
  DeactivateSchema,
  SandboxSchema,
  type LeaseStart,
  type LeaseState,
  type RecoveredLease,
} from '../domain/lease';
import { Activation } from './lease/activation';
import { Deactivation } from './lease/deactivation';
import { Grants } from './lease/grant';
import { Production } from './lease/production';
import { Release } from './lease/release';
import { Reterm } from './lease/reterm';
import { Running } from './lease/running';
import { LeaseRun } from './lease/run';
import {
  confirmAnswerUpdate,
  consumeUpdate,
  deactivateUpdate,
  leaseStateQuery,
  nodeReplacedSignal,
  offerUpdate,
  podRunningSignal,
  releaseSignal,
  retrySignal,
} from './lease-messages';
import { validated } from './validated';

export { CANCELLED_REASON } from './lease/release';

/**
 * `recovered`: what a closed run of this lease held, when the control worker starts it again
 * because its pod still runs (issue 25 item 6): its sandboxes, and whether the pod was Running.
 */
export async function leaseWorkflow(start: LeaseStart, recovered?: RecoveredLease): Promise<LeaseState> {
  const run = new LeaseRun(start, recovered);
  const running = new Running(run);
  const production = new Production(run, running);
  const deactivation = new Deactivation(run);
  const release = new Release(run, production, deactivation);
  const grants = new Grants(run, production, new Reterm(run, production, deactivation), running);
  const activation = new Activation(run, running);

  setHandler(consumeUpdate, (request) => grants.consume(request), {
    validator: (request) => {
      validated(ConsumeSchema, 'consume')(request);
      grants.refuseOtherTerms(request);
    },
  });
  setHandler(offerUpdate, () => grants.offer(), {
    description: 'Sent by the node agent that pre-produced the lease (not for operators).',
  });
  setHandler(confirmAnswerUpdate, (answer) => grants.confirmAnswer(answer), {
    validator: (answer) => {
      validated(SandboxSchema, 'confirmAnswer')(answer);
      if (answer.links !== undefined) validated(ActivatedLinksSchema, 'confirmAnswer links')(answer.links);
    },
    description: 'Sent by the node agent for an ADD it answered and made itself (not for operators).',
  });
  setHandler(deactivateUpdate, (request) => deactivation.deactivateSandbox(request), {
    validator: validated(DeactivateSchema, 'deactivate'),
  });
  // Descriptions: what the UI's Signal form and Queries tab (workflow metadata) offer an operator.
  setHandler(podRunningSignal, () => running.confirmRunning(), {
    description: 'Sent by netlease when the pod is Running (not for operators).',
  });
  setHandler(releaseSignal, (request: unknown) => release.requestRelease(request), {
    description:
      'Release the lease: deactivate and return its addresses. Input: {"reason":"manual"} (without a reason it is ignored).',
  });
  setHandler(retrySignal, () => activation.retryParked(), {
    description: 'Run a parked (ActivationFailed) activation again with a fresh budget. No input.',
  });
  setHandler(nodeReplacedSignal, (event: unknown) => release.nodeReplaced(event), {
    description:
      'Sent by the node workflow when a new incarnation of the node adopted the lease (not for operators).',
  });
  setHandler(leaseStateQuery, () => run.state, { description: 'The whole lease state.' });
  // A cancellation request (UI, `temporal workflow cancel`) is a release: every wait sees it.
  CancellationScope.current().cancelRequested.catch(() => release.cancelled());

  try {
    if (await production.produce()) await activation.untilReleased();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    release.cancelled();
  }
  // A cancelled lease still gives its addresses back: release runs whatever is cancelled.
  return CancellationScope.nonCancellable(async () => {
    await release.start();
    await condition(allHandlersFinished);
    return run.state;
  });
}
