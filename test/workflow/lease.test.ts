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
import { FailureType, type LeaseStart } from '../../domain/lease';
import {
  LEASE_WORKFLOW_TYPE,
  leaseStateQuery,
  podRunningSignal,
  releaseSignal,
  retrySignal,
} from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

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
      activateAttachment: async () => {
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
      deactivateAttachment: async () => undefined,
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
const add = (start: LeaseStart, containerId = 'ctr-1') =>
  consumeLease(t.env.client, t.taskQueue, start, { containerId, netns: '/var/run/netns/x', ifName: 'eth0' });
const handleOf = (start: LeaseStart) =>
  t.env.client.workflow.getHandle(leaseWorkflowId(start.podUid, 'eth0'));
const phaseOf = (start: LeaseStart, phase: string) =>
  waitForValue(
    () => handleOf(start).query(leaseStateQuery),
    (s) => s.phase === phase,
    15_000,
  );
const failureType = (err: unknown) =>
  err instanceof WorkflowUpdateFailedError
    ? (err.cause as ApplicationFailure | undefined)?.type
    : String(err);

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

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 4);
});
