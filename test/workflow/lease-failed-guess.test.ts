// A guess that gave way to an ADD whose produce failed (the fuzz, seed 579550361: an ADD naming a
// Node that does not exist) must not answer every later ADD with that failure: the lease holds
// nothing and told nobody, so the next ADD is a retry on its own terms: another, valid node, or
// the same node once it is registered (11 said "try again later").
import { ApplicationFailure } from '@temporalio/common';
import { consumeLease } from '../../cni/consume';
import type { ProduceInput, Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { leaseWorkflowId } from '../../domain/ids';
import { FailureType, termsOf } from '../../domain/lease';
import { leaseStartOptions } from '../../temporal/leases';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery, releaseSignal } from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { waitForValue } from '../harness/wait';
import {
  updateFailureType,
  workflowTestEnv,
  type WorkflowTestEnv,
  testLeaseStart,
} from '../harness/workflow-env';

const policy = ActivationPolicySchema.parse({ initialIntervalSeconds: 0.2, maximumAttempts: 3 });
/** Nodes the "cluster" knows; a test registers one late. */
const registered = new Set(['node-a', 'node-b']);
const produced: string[] = [];
const returned: string[] = [];
/** The static addresses each produce asked for. */
const asked: Array<string[] | undefined> = [];

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-failed-guess');
  await t.worker({
    produceAddresses: async ({ nodeName, run, addresses }: ProduceInput): Promise<Produced> => {
      asked.push(addresses);
      if (!registered.has(nodeName))
        throw ApplicationFailure.nonRetryable(
          `nodeName: node "${nodeName}" does not exist in the cluster now`,
          FailureType.nodeUnknown,
        );
      produced.push(`${nodeName} ${run}`);
      const last = produced.length + 1;
      return {
        addresses: [{ family: 4, address: addresses?.[0] ?? `198.18.1.${last}`, prefixLength: 24 }],
        activation: policy,
      };
    },
    returnAddresses: async ({ run }: { run: string }) => {
      returned.push(run);
      return [];
    },
  });
});
afterAll(async () => t?.close());

const guessOn = async (nodeName: string) => {
  const start = testLeaseStart('guess', nodeName, 'ipam', { podName: 'guessed' });
  // Pre-produced: started by the agent on its guess, nobody told yet.
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    ...leaseStartOptions(t.taskQueue, start),
    args: [start],
  });
  await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Produced',
    15_000,
  );
  const add = (node: string, containerId = 'ctr') =>
    consumeLease(t.env.client, t.taskQueue, start, {
      containerId,
      netns: '/var/run/netns/guessed',
      ifName: 'eth0',
      terms: { ...termsOf(start), nodeName: node },
    });
  return { handle, add, start, leaseId: leaseWorkflowId(start.podUid, 'eth0') };
};

const failureType = updateFailureType;

test('an ADD of a valid node after one naming an unknown node is served (seen red: 11 naming the unknown node)', async () => {
  const { handle, add } = await guessOn('node-a');
  expect(await add('vm').catch(failureType)).toBe(FailureType.nodeUnknown);
  const grant = await add('node-b');
  expect(grant.addresses).toHaveLength(1);
  const state = await handle.query(leaseStateQuery);
  expect(state).toMatchObject({ phase: 'Active', told: true, start: { nodeName: 'node-b' } });
  expect(state.addresses).toEqual(grant.addresses);
  await handle.signal(releaseSignal, { reason: 'test over' });
  expect((await handle.result()).phase).toBe('Released');
}, 60_000);

test('the same ADD retried once its Node is registered is served (11 meant try again later)', async () => {
  const { handle, add } = await guessOn('node-a');
  expect(await add('node-late').catch(failureType)).toBe(FailureType.nodeUnknown);
  expect(await add('node-late').catch(failureType)).toBe(FailureType.nodeUnknown);
  registered.add('node-late');
  const grant = await add('node-late');
  expect(grant.addresses).toHaveLength(1);
  expect((await handle.query(leaseStateQuery)).start.nodeName).toBe('node-late');
  await handle.signal(releaseSignal, { reason: 'test over' });
  const released = await handle.result();
  expect(released.phase).toBe('Released');
}, 60_000);

test('a lease whose withdrawn guess failed to produce and is then released ends Released, returning nothing twice', async () => {
  const { handle, add } = await guessOn('node-a');
  const before = returned.length;
  expect(await add('nowhere').catch(failureType)).toBe(FailureType.nodeUnknown);
  expect(returned.length).toBe(before + 1); // the guess went back, once
  await handle.signal(releaseSignal, { reason: 'pod deleted' });
  const released = await handle.result();
  expect(released.phase).toBe('Released');
  expect(returned.length).toBe(before + 1);
}, 60_000);

test('a guess made without the static address the ADD names gives way to it (issue 29 item 2)', async () => {
  const { handle, start } = await guessOn('node-a');
  const before = returned.length;
  asked.length = 0;
  const grant = await consumeLease(t.env.client, t.taskQueue, start, {
    containerId: 'ctr-static',
    netns: '/var/run/netns/guessed',
    ifName: 'eth0',
    terms: { ...termsOf(start), staticAddresses: '198.18.9.9' },
  });
  expect(grant.addresses.map((a) => a.address)).toEqual(['198.18.9.9']);
  expect(asked).toEqual([['198.18.9.9']]); // the guess's produce came before
  expect(returned.length).toBe(before + 1); // the guessed address went back
  expect((await handle.query(leaseStateQuery)).start.staticAddresses).toBe('198.18.9.9');
  await handle.signal(releaseSignal, { reason: 'test over' });
  expect((await handle.result()).phase).toBe('Released');
}, 60_000);

test('every history replays', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 4);
});
