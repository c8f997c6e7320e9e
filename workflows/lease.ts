// lease/<podUID>/<ifName>: one pod interface from produce to release. The reservation made at
// produce time stays bound to the pod until release (seed 003: nothing is popped at consume).
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import type { ActivationPolicy } from '../domain/config';
import {
  ConsumeSchema,
  DeactivateSchema,
  FailureType,
  ReleaseSchema,
  type Attachment,
  type LeaseGrant,
  type LeasePhase as Phase,
  type LeaseStart,
  type LeaseState,
  type ReleaseRequest,
} from '../domain/lease';
import { IPAddresses, LeasePhase } from '../domain/search-attributes';
import { activateOnNode, deactivateOnNode } from './dataplane';
import { validated } from './validated';
import {
  consumeUpdate,
  deactivateUpdate,
  leaseStateQuery,
  podRunningSignal,
  releaseSignal,
  retrySignal,
} from './lease-messages';

export { consumeUpdate, deactivateUpdate, leaseStateQuery, podRunningSignal, releaseSignal, retrySignal };
import { describe, toApplicationFailure } from './failures';

const { produceAddresses, returnAddresses } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [FailureType.invalidConfig, FailureType.exhausted, FailureType.conflict],
  },
});

export async function leaseWorkflow(start: LeaseStart): Promise<LeaseState> {
  const leaseId = `lease/${start.podUid}/${start.ifName}`;
  const state: LeaseState = { phase: 'Producing', start, addresses: [], attachments: [] };
  let policy: ActivationPolicy | undefined;
  let produceFailure: ApplicationFailure | undefined;
  let release: ReleaseRequest | undefined;
  let podRunning = false;

  const enter = (phase: Phase, details: string) => {
    state.phase = phase;
    upsertSearchAttributes([
      { key: LeasePhase, value: phase },
      { key: IPAddresses, value: state.addresses.map((a) => a.address) },
    ]);
    setCurrentDetails(`${phase}: ${details}`);
  };
  const grantFor = (attachment: Attachment): LeaseGrant => ({
    leaseId,
    addresses: state.addresses,
    containerId: attachment.containerId,
    ifName: attachment.ifName,
    ...(attachment.links ? { links: attachment.links } : {}),
  });
  const releasing = () => release !== undefined;

  /** Active for too long without the pod Running: visible as Stalled, never released for it. */
  const watchForStall = async () => {
    const seconds = policy?.stalledAfterSeconds ?? 600;
    const settled = await condition(() => podRunning || state.phase !== 'Active', `${seconds} seconds`);
    if (!settled && state.phase === 'Active')
      enter('Stalled', `active for ${seconds} s but the pod is not Running`);
  };

  /** A node that stays unreachable past the deactivation budget must not wedge DEL or release. */
  const deactivate = async (attachment: Attachment): Promise<void> => {
    try {
      await deactivateOnNode(start, attachment, state.addresses);
    } catch (err) {
      if (isCancellation(err)) throw err;
      state.lastError = `deactivating ${attachment.ifName} of ${attachment.containerId.slice(0, 12)} gave up: ${describe(err)}`;
    }
  };

  const nextToActivate = () => state.attachments.find((a) => a.status === 'pending');

  /** One activation run (the activity retries inside the policy's budget); parks when spent. */
  const activate = async (attachment: Attachment): Promise<void> => {
    attachment.status = 'activating';
    enter('Activating', `configuring ${attachment.ifName} in ${attachment.netns || 'the runtime'}`);
    try {
      attachment.links = await activateOnNode(start, attachment, state.addresses, policy);
      attachment.status = 'active';
      state.lastError = undefined;
      if (podRunning) enter('Running', 'pod is Running');
      else {
        enter('Active', 'interface ready; waiting for the pod to be Running');
        void watchForStall();
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      attachment.status = 'parked';
      state.lastError = describe(err);
      enter(
        'ActivationFailed',
        `retries spent; last error: ${state.lastError}; send the "retry" signal to try again`,
      );
    }
  };

  setHandler(
    consumeUpdate,
    async (request) => {
      await condition(() => state.addresses.length > 0 || produceFailure !== undefined || releasing());
      if (produceFailure) throw produceFailure;
      if (releasing()) throw failure(`lease is ${state.phase}`, FailureType.released);
      const same = state.attachments.find(
        (a) => a.containerId === request.containerId && a.ifName === request.ifName,
      );
      const attachment = same ?? { ...request, status: 'pending' };
      if (!same) {
        state.attachments.push(attachment);
        enter('Consumed', `claimed by sandbox ${request.containerId.slice(0, 12)}`);
      } else if (same.status === 'parked') {
        same.status = 'pending'; // a repeated ADD is a retry
      }
      await condition(() => attachment.status === 'active' || attachment.status === 'parked' || releasing());
      if (attachment.status !== 'active') {
        throw failure(`activation failed: ${state.lastError ?? state.phase}`, FailureType.activationFailed);
      }
      return grantFor(attachment);
    },
    { validator: validated(ConsumeSchema, 'consume') },
  );

  setHandler(
    deactivateUpdate,
    async (request) => {
      const index = state.attachments.findIndex(
        (a) => a.containerId === request.containerId && a.ifName === request.ifName,
      );
      const attachment = state.attachments[index];
      if (!attachment) return false;
      await condition(() => attachment.status !== 'activating');
      state.attachments = state.attachments.filter((a) => a !== attachment);
      await deactivate(attachment);
      if (!releasing() && !state.attachments.some((a) => a.status === 'active')) {
        enter('Produced', 'sandbox deleted; address held for the pod until it is gone');
      }
      return true;
    },
    { validator: validated(DeactivateSchema, 'deactivate') },
  );

  setHandler(podRunningSignal, () => {
    podRunning = true;
    if (state.phase === 'Active' || state.phase === 'Stalled') enter('Running', 'pod is Running');
  });
  setHandler(releaseSignal, (request) => {
    release ??= ReleaseSchema.parse(request);
  });
  setHandler(retrySignal, () => {
    for (const attachment of state.attachments)
      if (attachment.status === 'parked') attachment.status = 'pending';
  });
  setHandler(leaseStateQuery, () => state);

  // produce: reserve the addresses for this pod.
  setCurrentDetails(`Producing: reserving addresses on node ${start.nodeName}`);
  try {
    const produced = await produceAddresses({
      leaseId,
      podUid: start.podUid,
      nodeName: start.nodeName,
      pool: start.pool,
    });
    state.addresses = produced.addresses;
    policy = produced.activation;
    enter('Produced', 'addresses reserved; waiting for a CNI ADD');
  } catch (err) {
    produceFailure = toApplicationFailure(err, FailureType.invalidConfig);
    state.lastError = produceFailure.message;
    enter('Released', `produce failed: ${produceFailure.message}`);
    await condition(allHandlersFinished);
    throw produceFailure;
  }

  while (!releasing()) {
    await condition(() => releasing() || nextToActivate() !== undefined);
    const next = nextToActivate();
    if (next && !releasing()) await activate(next);
  }
  const request = release as ReleaseRequest;
  state.releaseReason = request.reason;
  enter('Releasing', `${request.reason}; deactivating and returning addresses`);
  if (!request.nodeGone) {
    for (const attachment of state.attachments) await deactivate(attachment);
  }
  state.attachments = [];
  await returnAddresses({ leaseId, nodeName: start.nodeName, pool: start.pool });
  enter('Released', `${request.reason}; addresses returned`);
  await condition(allHandlersFinished);
  return state;
}

function failure(message: string, type: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}
