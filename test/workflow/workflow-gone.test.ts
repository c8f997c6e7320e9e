// The one rule for "the workflow is gone" (temporal/workflow-gone) against what the real server and
// SDK answer: a lease never started, one running, one that refused an update, one closed.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { consumeLease } from '../../cni/consume';
import type { ProduceInput, Produced } from '../../activities/addresses';
import { leaseWorkflowId } from '../../domain/ids';
import { FailureType, termsOf, type LeaseStart } from '../../domain/lease';
import { callUpdate, UPDATE_OUTLIVED } from '../../activities/update-call';
import { isGoneError, isUpdateRefusal, unlessGone, workflowIsGone } from '../../temporal/workflow-gone';
import { LEASE_WORKFLOW_TYPE, offerUpdate, retrySignal } from '../../workflows/lease-messages';
import { acceptedUpdates } from '../harness/history';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

/** produceAddresses: never answers ('never…' pods, until cancelled) or fails ('ghost…'). */
const produceFor = (input: ProduceInput): Promise<Produced> => {
  if (input.podUid.startsWith('never')) return Context.current().cancelled as Promise<never>;
  throw ApplicationFailure.nonRetryable('nodeName: node "ghost" does not exist', FailureType.nodeUnknown);
};

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-gone');
  await t.worker({ produceAddresses: produceFor, returnAddresses: async () => [] });
});
afterAll(async () => t?.close());

const startOf = (podUid: string): LeaseStart => ({
  podUid,
  podNamespace: 'ns',
  podName: podUid,
  ifName: 'eth0',
  nodeName: 'wf-gone-node',
  pool: 'p',
  mode: 'ipam',
});
const startLease = (start: LeaseStart) =>
  t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: leaseWorkflowId(start.podUid, 'eth0'),
    taskQueue: t.taskQueue,
    args: [start],
  });
const failureOf = (call: Promise<unknown>) =>
  call.then(
    () => 'succeeded',
    (err: unknown) => err,
  );
/** How the rule classifies each call's failure. */
const classified = (err: unknown) => ({ gone: isGoneError(err), refused: isUpdateRefusal(err) });
const signalAndUpdate = (handle: WorkflowHandle) =>
  Promise.all([failureOf(handle.signal(retrySignal)), failureOf(handle.executeUpdate(offerUpdate))]);

test('a workflow never started is gone: describe, signal and update all say so', async () => {
  const handle = t.env.client.workflow.getHandle(leaseWorkflowId(uniqueName('none'), 'eth0'));
  expect(await workflowIsGone(t.env.client, handle.workflowId)).toBe(true);
  const failures = await signalAndUpdate(handle);
  expect(failures.map(classified)).toEqual([
    { gone: true, refused: false },
    { gone: true, refused: false },
  ]);
  expect(await unlessGone(() => handle.signal(retrySignal), 'gone')).toBe('gone');
});

test('a running workflow is not gone; an update it refuses is a refusal, not gone', async () => {
  const running = await startLease(startOf(uniqueName('never')));
  expect(await workflowIsGone(t.env.client, running.workflowId)).toBe(false);
  expect(await unlessGone(() => running.signal(retrySignal), 'gone')).toBeUndefined();

  const ghost = startOf(uniqueName('ghost'));
  const refusal = await failureOf(
    consumeLease(t.env.client, t.taskQueue, ghost, {
      containerId: 'ctr-ghost',
      netns: '/var/run/netns/g',
      ifName: 'eth0',
      terms: termsOf(ghost),
    }),
  );
  expect(classified(refusal)).toEqual({ gone: false, refused: true });
  // A failure that is neither is thrown on, never taken for "gone".
  await expect(unlessGone(() => Promise.reject(refusal), 'gone')).rejects.toBe(refusal);
  await running.terminate('test done');
});

test('a closed workflow is gone; an update it held accepted when it closed is not taken, not gone', async () => {
  const lease = await startLease(startOf(uniqueName('never')));
  // The offer update waits for addresses that never come: accepted, in flight.
  const inFlight = failureOf(lease.executeUpdate(offerUpdate));
  const accepted = await waitForValue(
    () => acceptedUpdates(t.env.client, lease.workflowId),
    (names) => names.includes('offer'),
    15_000,
  );
  expect(accepted).toEqual(['offer']);
  await lease.terminate('the run closes under the update');
  const outlived = await inFlight;
  expect(classified(outlived)).toEqual({ gone: false, refused: true });
  expect(((outlived as { cause?: unknown }).cause as ApplicationFailure).type).toBe(
    'AcceptedUpdateCompletedWorkflow',
  );

  expect(await workflowIsGone(t.env.client, lease.workflowId)).toBe(true);
  const failures = await signalAndUpdate(lease);
  expect(failures.map(classified)).toEqual([
    { gone: true, refused: false },
    { gone: true, refused: false },
  ]);
});

test("an activity's update that its run outlived is retried, not failed for good", async () => {
  const lease = await startLease(startOf(uniqueName('never')));
  const inFlight = failureOf(callUpdate(() => lease.executeUpdate(offerUpdate)));
  await waitForValue(
    () => acceptedUpdates(t.env.client, lease.workflowId),
    (names) => names.includes('offer'),
    15_000,
  );
  await lease.terminate('an operator terminates the node while it holds a release');
  const failure = await inFlight;
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect(failure).toMatchObject({ type: UPDATE_OUTLIVED, nonRetryable: false });
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 4);
});
