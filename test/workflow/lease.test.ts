// The lease state machine's edges with its activities replaced: release while producing, a
// produce failure, park and retry, stall and confirm-running.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { consumeLease } from '../../cni/consume';
import type { ProduceInput, Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { DataplaneFailure, nodeTaskQueue } from '../../domain/dataplane';
import { leaseWorkflowId } from '../../domain/ids';
import { FailureType, termsOf, type InterfaceMaker, type LeaseStart } from '../../domain/lease';
import type { OfferAnswer, OfferRevocation } from '../../domain/offer';
import {
  LEASE_WORKFLOW_TYPE,
  confirmAnswerUpdate,
  leaseStateQuery,
  offerUpdate,
  podRunningSignal,
  releaseSignal,
  retrySignal,
} from '../../workflows/lease-messages';
import { CANCELLED_REASON } from '../../workflows/lease';
import { currentDetails } from '../harness/history';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { updateFailureType, workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const node = uniqueName('wf-node');
const quick = ActivationPolicySchema.parse({
  initialIntervalSeconds: 0.1,
  maximumIntervalSeconds: 0.1,
  maximumAttempts: 2,
  attemptTimeoutSeconds: 5,
  stalledAfterSeconds: 1,
});
const addresses = [{ family: 4 as const, address: '198.18.0.2', prefixLength: 26, gateway: '198.18.0.1' }];

/** produceAddresses by pod uid: a fixed grant, a failure, or never (until cancelled). */
const produceFor = (input: ProduceInput): Promise<Produced> => {
  if (input.podUid.startsWith('never')) return Context.current().cancelled as Promise<never>;
  if (input.podUid.startsWith('ghost'))
    throw ApplicationFailure.nonRetryable(`nodeName: node "ghost" does not exist`, FailureType.nodeUnknown);
  return Promise.resolve({ addresses, activation: quick });
};
const returned: ProduceInput[] = [];
let linkFixed = false;
/** What the node's revokeOffer answers per lease id (the sandbox the agent answered), and the calls. */
const answeredFromOffer = new Map<string, OfferAnswer>();
const revocations: Array<{ leaseId: string; run: string; before: number }> = [];
const deactivated: string[] = [];

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-lease');
  await t.worker({
    produceAddresses: produceFor,
    returnAddresses: async (input: ProduceInput) => {
      returned.push(input);
      return [];
    },
  });
  await t.worker(
    {
      activateAttachment: async ({ leaseId }: { leaseId: string }) => {
        // 'hang' leases: an activation toward a sandbox that never comes (until cancelled).
        if (leaseId.includes('/hang')) return Context.current().cancelled as Promise<never>;
        if (!linkFixed)
          throw ApplicationFailure.retryable(
            "eth0 exists and is not netlease's",
            DataplaneFailure.linkConflict,
          );
        return {
          host: { name: 'nl0', mac: '02:00:00:00:00:01' },
          container: { name: 'eth0', mac: '02:00:00:00:00:02' },
        };
      },
      deactivateAttachment: async ({ leaseId }: { leaseId: string }) => {
        deactivated.push(leaseId);
      },
      revokeOffer: async ({ leaseId, run }: OfferRevocation) => {
        revocations.push({ leaseId, run, before: returned.filter((r) => r.leaseId === leaseId).length });
        return answeredFromOffer.get(leaseId) ?? null;
      },
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => t?.close());

const startOf = (podUid: string, mode: LeaseStart['mode'] = 'ipam'): LeaseStart => ({
  podUid,
  podNamespace: 'ns',
  podName: podUid,
  ifName: 'eth0',
  nodeName: node,
  pool: 'p',
  mode,
});
const add = (start: LeaseStart, containerId = 'ctr-1', terms = termsOf(start), madeBy?: InterfaceMaker) =>
  consumeLease(t.env.client, t.taskQueue, start, {
    containerId,
    netns: '/var/run/netns/x',
    ifName: 'eth0',
    terms,
    ...(madeBy ? { madeBy } : {}),
  });
const handleOf = (start: LeaseStart) =>
  t.env.client.workflow.getHandle(leaseWorkflowId(start.podUid, 'eth0'));
const phaseOf = (start: LeaseStart, phase: string) =>
  waitForValue(
    () => handleOf(start).query(leaseStateQuery),
    (s) => s.phase === phase,
    15_000,
  );
const failureType = updateFailureType;

test('release while Producing: produce is cancelled, addresses returned, the waiting ADD refused', async () => {
  const start = startOf(uniqueName('never'));
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  const waiting = add(start).catch(failureType);
  await phaseOf(start, 'Producing');
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  const state = await handle.result();
  expect(state.phase).toBe('Released');
  expect(state.releaseReason).toBe('pod gone');
  expect(await waiting).toBe(FailureType.released);
  expect(returned.filter((r) => r.leaseId === handle.workflowId)).toEqual([
    { leaseId: handle.workflowId, run: handle.firstExecutionRunId, nodeName: node, pool: 'p' },
  ]);
});

test('a produce failure answers the ADD with its cause and completes the lease (not Failed)', async () => {
  const start = startOf(uniqueName('ghost'));
  expect(await add(start).catch(failureType)).toBe(FailureType.nodeUnknown);
  const description = await handleOf(start).describe();
  expect(description.status.name).toBe('COMPLETED');
  const state = await handleOf(start).result();
  expect(state.phase).toBe('Released');
  expect(state.lastError).toContain('does not exist');
});

test('activation budget spent: parked with the error and the address; retry makes it Active', async () => {
  const start = startOf(uniqueName('park'), 'ptp');
  linkFixed = false;
  expect(await add(start).catch(failureType)).toBe(FailureType.activationFailed);
  const parked = await handleOf(start).query(leaseStateQuery);
  expect(parked.phase).toBe('ActivationFailed');
  expect(parked.lastError).toContain('not netlease');
  expect(parked.addresses).toEqual(addresses);

  linkFixed = true;
  await handleOf(start).signal(retrySignal);
  await phaseOf(start, 'Active');
  const grant = await add(start); // the runtime's next ADD gets the result
  expect(grant.addresses).toEqual(addresses);
  expect(grant.links?.container.name).toBe('eth0');
});

test('Active without the pod Running becomes Stalled, and Running once confirmed', async () => {
  const start = startOf(uniqueName('stall'));
  await add(start);
  const stalled = await phaseOf(start, 'Stalled');
  expect(stalled.phase).toBe('Stalled');
  await handleOf(start).signal(podRunningSignal);
  expect((await phaseOf(start, 'Running')).phase).toBe('Running');
  await handleOf(start).signal(releaseSignal, { reason: 'done' });
  expect((await handleOf(start).result()).phase).toBe('Released');
});

test('an offered lease revokes the offer before it returns its addresses; an unconfirmed answer comes back', async () => {
  const start = startOf(uniqueName('offered'));
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  const offer = await handle.executeUpdate(offerUpdate);
  expect(offer).toEqual({ run: handle.firstExecutionRunId, start, addresses });
  // The agent answered an ADD from the offer and died before confirming it.
  const sandbox = { containerId: 'ctr-answered', netns: '/var/run/netns/a', ifName: 'eth0' };
  answeredFromOffer.set(handle.workflowId, sandbox);
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  const state = await handle.result();
  expect(state.phase).toBe('Released');
  expect(state.lastError).toBeUndefined();
  const mine = revocations.filter((r) => r.leaseId === handle.workflowId);
  expect(mine).toEqual([{ leaseId: handle.workflowId, run: handle.firstExecutionRunId, before: 0 }]);
  expect(returned.filter((r) => r.leaseId === handle.workflowId)).toHaveLength(1);
  // The lease recorded the answered sandbox before ending it (its history shows the revocation's answer).
  const events = (await handle.fetchHistory()).events ?? [];
  const results = events.map((e) =>
    Buffer.from(e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data ?? '').toString(),
  );
  expect(results.some((r) => r.includes('ctr-answered'))).toBe(true);
});

test('a confirmed answer spends the offer: release revokes nothing; a closed lease takes no offer', async () => {
  const start = startOf(uniqueName('confirmed'));
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  await handle.executeUpdate(offerUpdate);
  const grant = await handle.executeUpdate(confirmAnswerUpdate, {
    args: [{ containerId: 'ctr-c', netns: '/var/run/netns/c', ifName: 'eth0' }],
  });
  expect(grant.addresses).toEqual(addresses);
  expect((await handle.query(leaseStateQuery)).phase).toBe('Active');
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  await handle.result();
  expect(revocations.filter((r) => r.leaseId === handle.workflowId)).toEqual([]);

  const ptp = startOf(uniqueName('ptp-offer'), 'ptp');
  const ptpHandle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(ptp.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [ptp],
  });
  await ptpHandle.executeUpdate(offerUpdate);
  // A ptp answer carries the links the agent made: the lease runs no activation of its own.
  const links = {
    host: { name: 'nl1', mac: '02:00:00:00:00:03' },
    container: { name: 'eth0', mac: '02:00:00:00:00:04', sandbox: '/var/run/netns/p' },
  };
  const ptpGrant = await ptpHandle.executeUpdate(confirmAnswerUpdate, {
    args: [{ containerId: 'ctr-p', netns: '/var/run/netns/p', ifName: 'eth0', links }],
  });
  expect(ptpGrant.links).toEqual(links);
  await ptpHandle.signal(releaseSignal, { reason: 'pod gone' });
  await ptpHandle.result();
  expect(await ptpHandle.executeUpdate(offerUpdate).catch(failureType)).toMatch(/not found|completed/i);
});

test('an ADD of another network, mode or pool is refused naming both sides, and changes nothing', async () => {
  const start = { ...startOf(uniqueName('terms')), network: 'net-a' };
  await add(start, 'ctr-a');
  const before = await handleOf(start).query(leaseStateQuery);
  const other = { ...termsOf(start), network: 'net-b', mode: 'ptp' as const, pool: 'v6only' };
  const refusal = await add(start, 'ctr-b', other).catch((err: unknown) => err);
  expect(failureType(refusal)).toBe(FailureType.termsMismatch);
  expect((refusal as WorkflowUpdateFailedError).cause?.message).toBe(
    `pod ns/${start.podName}'s eth0 lease was produced for network net-a (ipam, pool p); ` +
      'this ADD is for network net-b (ptp, pool v6only)',
  );
  // Refused by the validator: no attachment, no event for it in the history.
  expect(await handleOf(start).query(leaseStateQuery)).toEqual(before);
  const events = (await handleOf(start).fetchHistory()).events ?? [];
  expect(events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
  await handleOf(start).signal(releaseSignal, { reason: 'done' });
  await handleOf(start).result();
});

/** How the lease's run ended, waited for with a deadline (a wedged lease never ends). */
async function ended(start: LeaseStart): Promise<string> {
  const status = async () => (await handleOf(start).describe()).status.name;
  return waitForValue(status, (s) => s !== 'RUNNING', 15_000);
}
const failedTasks = async (start: LeaseStart) =>
  ((await handleOf(start).fetchHistory()).events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)
    .length;
const returnedFor = (start: LeaseStart) =>
  returned.filter((r) => r.leaseId === leaseWorkflowId(start.podUid, 'eth0')).length;

test('a release signal without a reason is ignored with a note; the lease keeps working; a proper release ends it', async () => {
  const start = startOf(uniqueName('bad-release'));
  await add(start);
  const handle = handleOf(start);
  // No input (the CLI without --input, the UI's empty Data), {}, not an object, an empty reason.
  await handle.signal('release');
  await handle.signal('release', {});
  await handle.signal('release', 'now');
  await handle.signal('release', { reason: '' });
  await handle.signal(podRunningSignal); // processed only if the workflow tasks above succeeded
  expect((await phaseOf(start, 'Running')).phase).toBe('Running');
  expect(await failedTasks(start)).toBe(0);
  // The operator sees why nothing happened, under the phase's own details.
  await handle.signal('release', {});
  const details = await waitForValue(
    () => currentDetails(t.env.client, handle.workflowId),
    (d) => d.includes('Note'),
    15_000,
  );
  expect(details).toMatch(
    /^Running: pod is Running\n\n\*\*Note:\*\* ignored a release signal \(reason: [^)]+\): send `\{"reason":"<why>"\}` to release the lease$/,
  );
  expect(returnedFor(start)).toBe(0);
  await handle.signal(releaseSignal, { reason: 'done' });
  expect(await ended(start)).toBe('COMPLETED');
  expect((await handle.result()).releaseReason).toBe('done');
  expect(returnedFor(start)).toBe(1);
});

test('a release signal with no input names it in the note', async () => {
  const start = startOf(uniqueName('no-input'));
  await add(start);
  await handleOf(start).signal('release');
  const details = await waitForValue(
    () => currentDetails(t.env.client, handleOf(start).workflowId),
    (d) => d.includes('Note'),
    15_000,
  );
  expect(details).toBe(
    'Active: interface ready; waiting for the pod to be Running\n\n**Note:** ignored a release signal (no input): ' +
      'send `{"reason":"<why>"}` to release the lease',
  );
  await handleOf(start).signal(releaseSignal, { reason: 'done' });
  expect(await ended(start)).toBe('COMPLETED');
});

/** A cancellation request releases the lease: completed (not cancelled or failed), addresses returned. */
async function expectReleasedByCancel(start: LeaseStart): Promise<void> {
  await handleOf(start).cancel();
  expect(await ended(start)).toBe('COMPLETED');
  const state = await handleOf(start).result();
  expect(state).toMatchObject({ phase: 'Released', releaseReason: CANCELLED_REASON, attachments: [] });
  expect(returnedFor(start)).toBe(1);
  expect(await failedTasks(start)).toBe(0);
}

test('cancel while Producing: the reservation is cancelled, the waiting ADD refused, the lease Released', async () => {
  const start = startOf(uniqueName('never-cancel'));
  await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  const waiting = add(start).catch(failureType);
  await phaseOf(start, 'Producing');
  await expectReleasedByCancel(start);
  expect(await waiting).toBe(FailureType.released);
});

test('cancel while Active: the interface is deactivated, the addresses returned, the lease Released', async () => {
  const start = startOf(uniqueName('cancel-active'), 'ptp');
  linkFixed = true;
  await add(start);
  await phaseOf(start, 'Active');
  await expectReleasedByCancel(start);
  expect(deactivated).toContain(handleOf(start).workflowId);
});

test('cancel while parked in ActivationFailed: released like any release', async () => {
  const start = startOf(uniqueName('cancel-parked'), 'ptp');
  linkFixed = false;
  expect(await add(start).catch(failureType)).toBe(FailureType.activationFailed);
  await phaseOf(start, 'ActivationFailed');
  await expectReleasedByCancel(start);
  expect(deactivated).toContain(handleOf(start).workflowId);
});

// Last: every path above (offers included) is in the histories it replays.
test('release while Activating interrupts the activation: no retry budget spent, deactivated by name, Released', async () => {
  const start = startOf(uniqueName('hang'), 'ptp');
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  const waiting = add(start).catch(failureType);
  await phaseOf(start, 'Activating');
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  const state = await handle.result();
  expect(state.phase).toBe('Released');
  expect(state.lastError).toBeUndefined(); // not parked first: the budget (2 × 5 s) was not spent
  expect(await waiting).toBe(FailureType.activationFailed);
  expect(deactivated).toContain(handle.workflowId);
  expect(returned.map((r) => r.leaseId)).toContain(handle.workflowId);
});

test("a release waiting on a gone node's agent is finished by a release that says the node is gone", async () => {
  // No agent polls this node's task queue: its revocation and deactivation would wait an hour.
  const start = {
    ...startOf(uniqueName('gone-node')),
    nodeName: uniqueName('wf-dead-node'),
    mode: 'ptp' as const,
  };
  await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
  await handleOf(start).executeUpdate(offerUpdate); // an offer the (gone) agent holds
  await handleOf(start).signal(releaseSignal, { reason: 'watcher: pod is Failed' });
  await phaseOf(start, 'Releasing');
  await handleOf(start).signal(releaseSignal, { reason: 'node deleted: pod gone', nodeGone: true });
  const result = await handleOf(start).result();
  expect(result.phase).toBe('Released');
  expect(result.releaseReason).toBe('watcher: pod is Failed');
  expect(result.lastError).toMatch(/dropped: the node is gone/);
  expect(returned.filter((r) => r.leaseId === leaseWorkflowId(start.podUid, 'eth0'))).toHaveLength(1);
}, 60_000);

/** The lease's workflow tasks so far, and whether any activity of this type was scheduled. */
async function tasksAndActivities(start: LeaseStart) {
  const events = (await handleOf(start).fetchHistory()).events ?? [];
  return {
    tasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
    activities: events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
    localActivities: events.filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    ).length,
  };
}

test("one ADD path, ipam: a cold ADD is answered in the lease's first workflow task (produce a local activity)", async () => {
  const start = startOf(uniqueName('one-task'));
  const grant = await add(start, 'ctr-1', termsOf(start), 'agent');
  expect(grant).toMatchObject({ addresses, containerId: 'ctr-1' });
  expect(grant.run).toBeUndefined(); // nothing for the agent to make: the attachment is active
  expect((await handleOf(start).query(leaseStateQuery)).phase).toBe('Active');
  expect(await tasksAndActivities(start)).toEqual({ tasks: 1, activities: [], localActivities: 1 });
  // The release is one more task: the return is a local activity too, and the run completes in it.
  await handleOf(start).signal(releaseSignal, { reason: 'done' });
  await handleOf(start).result();
  expect(await tasksAndActivities(start)).toEqual({ tasks: 2, activities: [], localActivities: 2 });
});

test('one ADD path, ptp: the agent gets the grant as an offer, makes the interface and confirms; no activation', async () => {
  const start = startOf(uniqueName('agent-makes'), 'ptp');
  const sandbox = { containerId: 'ctr-a', netns: '/var/run/netns/a', ifName: 'eth0' };
  const grant = await add(start, sandbox.containerId, termsOf(start), 'agent');
  const handle = handleOf(start);
  expect(grant).toMatchObject({ addresses, run: (await handle.describe()).runId });
  expect(grant.links).toBeUndefined();
  expect((await handle.query(leaseStateQuery)).attachments).toEqual([]); // the agent's answer comes next
  const links = {
    host: { name: 'nl2', mac: '02:00:00:00:00:05' },
    container: { name: 'eth0', mac: '02:00:00:00:00:06', sandbox: sandbox.netns },
  };
  const confirmed = await handle.executeUpdate(confirmAnswerUpdate, { args: [{ ...sandbox, links }] });
  expect(confirmed.links).toEqual(links);
  expect((await handle.query(leaseStateQuery)).phase).toBe('Active');
  // A repeated ADD of the sandbox gets the grant with its links; no activation ran anywhere.
  expect((await add(start, sandbox.containerId, termsOf(start), 'agent')).links).toEqual(links);
  expect((await tasksAndActivities(start)).activities).toEqual([]);
  await handle.signal(releaseSignal, { reason: 'done' });
  await handle.result();
  expect(deactivated).toContain(handle.workflowId);
});

test('one ADD path, ptp: a grant the agent did not confirm is revoked at release, its answer deactivated', async () => {
  const start = startOf(uniqueName('agent-died'), 'ptp');
  const grant = await add(start, 'ctr-d', termsOf(start), 'agent');
  const handle = handleOf(start);
  // The agent made the interface and died before confirming: its revocation hands the sandbox back.
  answeredFromOffer.set(handle.workflowId, {
    containerId: 'ctr-d',
    netns: '/var/run/netns/x',
    ifName: 'eth0',
  });
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  expect((await handle.result()).phase).toBe('Released');
  expect(revocations.filter((r) => r.leaseId === handle.workflowId)).toEqual([
    { leaseId: handle.workflowId, run: grant.run, before: 0 },
  ]);
  expect(deactivated).toContain(handle.workflowId);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 16);
});
