// A pod's newer sandbox is not held behind an activation toward its older one (found by the soak's
// node-moved fault): the kubelet of a machine that took over a node's name runs the pod again in a
// new sandbox, while the lease was still activating the sandbox of the machine that went (its
// namespace will never come). The kubelet runs one sandbox per pod at a time, so a newer claim
// stops the older one's activation: the new ADD is answered at once, not after the older budget.
import { ApplicationFailure } from '@temporalio/common';
import { consumeLease } from '../../cni/consume';
import type { ProduceInput, Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { DataplaneFailure, nodeTaskQueue, type AttachmentInput } from '../../domain/dataplane';
import { leaseWorkflowId } from '../../domain/ids';
import { termsOf, type LeaseStart } from '../../domain/lease';
import {
  confirmAnswerUpdate,
  deactivateUpdate,
  leaseStateQuery,
  releaseSignal,
} from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv, testLeaseStart } from '../harness/workflow-env';

const node = uniqueName('wf-sandbox-node');
/** A budget of about 22 s toward a namespace that never comes. */
const policy = ActivationPolicySchema.parse({
  initialIntervalSeconds: 0.5,
  maximumIntervalSeconds: 5,
  maximumAttempts: 8,
  attemptTimeoutSeconds: 5,
});
const addresses = [{ family: 4 as const, address: '198.18.0.9', prefixLength: 26, gateway: '198.18.0.1' }];
const GONE = '/var/run/netns/gone-with-its-machine';
const activated: string[] = [];
const deactivated: string[] = [];

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-sandbox');
  await t.worker({
    produceAddresses: async (_: ProduceInput): Promise<Produced> => ({ addresses, activation: policy }),
    returnAddresses: async () => [],
  });
  await t.worker(
    {
      activateAttachment: async ({ attachment }: AttachmentInput) => {
        if (attachment.netns === GONE)
          throw ApplicationFailure.retryable(
            `network namespace ${GONE} does not exist (yet)`,
            DataplaneFailure.netnsMissing,
          );
        activated.push(attachment.containerId);
        return {
          host: { name: 'nl0', mac: '02:00:00:00:00:01' },
          container: { name: 'eth0', mac: '02:00:00:00:00:02' },
        };
      },
      deactivateAttachment: async ({ attachment }: AttachmentInput) => {
        deactivated.push(attachment.containerId);
      },
      revokeOffer: async () => null,
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => t?.close());

const start = testLeaseStart('moved', node, 'ptp', { podName: 'moved' });
/** Until the pod's lease is activating a sandbox (its workflow may not have started yet). */
const untilActivating = (podUid: string) =>
  waitForValue(
    () =>
      t.env.client.workflow
        .getHandle(leaseWorkflowId(podUid, 'eth0'))
        .query(leaseStateQuery)
        .catch(() => undefined),
    (s) => s?.attachments.some((a) => a.status === 'activating') ?? false,
    15_000,
  );

const add = (containerId: string, netns: string, pod: LeaseStart = start, madeBy?: 'agent') =>
  consumeLease(t.env.client, t.taskQueue, pod, {
    containerId,
    netns,
    ifName: 'eth0',
    terms: termsOf(pod),
    ...(madeBy ? { madeBy } : {}),
  });

test('an ADD from a newer sandbox is answered at once while the older one is still being activated', async () => {
  const handle = t.env.client.workflow.getHandle(leaseWorkflowId(start.podUid, 'eth0'));
  const older = add('ctr-old-machine', GONE).catch((err: unknown) => err);
  await untilActivating(start.podUid);
  const began = Date.now();
  const grant = await add('ctr-new-machine', '/var/run/netns/new-machine');
  expect(Date.now() - began).toBeLessThan(8000); // not after the older sandbox's ~22 s budget
  expect(grant.addresses).toEqual(addresses);
  expect(activated).toEqual(['ctr-new-machine']);
  // The older ADD (its runtime went with its machine) gets an error, not an answer.
  expect(await older).toBeInstanceOf(Error);
  const state = await handle.query(leaseStateQuery);
  expect(state.phase).toBe('Active');
  expect(state.attachments.find((a) => a.containerId === 'ctr-new-machine')?.status).toBe('active');
  expect(state.attachments.find((a) => a.containerId === 'ctr-old-machine')?.status).not.toBe('activating');
  await handle.signal(releaseSignal, { reason: 'test over' });
  await handle.result();
}, 60_000);

test("one ADD path: a newer sandbox whose agent made the interface stops the older one's activation", async () => {
  const pod = { ...start, podUid: uniqueName('moved-agent') };
  const handle = t.env.client.workflow.getHandle(leaseWorkflowId(pod.podUid, 'eth0'));
  // The older ADD's agent could not make the interface: the lease activates it, toward a namespace gone.
  const older = add('ctr-old-agent', GONE, pod).catch((err: unknown) => err);
  await untilActivating(pod.podUid);
  const began = Date.now();
  // The newer ADD's agent makes the interface itself and confirms its answer: nothing waits on the lease.
  const netns = '/var/run/netns/new-agent';
  const grant = await add('ctr-new-agent', netns, pod, 'agent');
  expect(grant.run).toBeDefined();
  const links = {
    host: { name: 'nl1', mac: '02:00:00:00:00:03' },
    container: { name: 'eth0', mac: '02:00:00:00:00:04' },
  };
  await handle.executeUpdate(confirmAnswerUpdate, {
    args: [{ containerId: 'ctr-new-agent', netns, ifName: 'eth0', links }],
  });
  // The older activation stops then, not after its ~22 s budget; its ADD gets an error.
  expect(await older).toBeInstanceOf(Error);
  expect(Date.now() - began).toBeLessThan(8000);
  const state = await handle.query(leaseStateQuery);
  expect(state.phase).toBe('Active');
  expect(state.attachments.map((a) => [a.containerId, a.status])).toEqual([
    ['ctr-old-agent', 'parked'],
    ['ctr-new-agent', 'active'],
  ]);
  await handle.signal(releaseSignal, { reason: 'test over' });
  await handle.result();
}, 60_000);

test('a DEL of the sandbox being activated stops its activation and is answered at once', async () => {
  // The runtime gave up on the sandbox (its ADD failed: an agent rolled mid-ADD) and tore its
  // namespace down; the lease's activation toward it would retry its whole budget, and the DEL,
  // queued on the node meanwhile, waited behind it (the upgrade test's DEL queue did not drain).
  const pod = { ...start, podUid: uniqueName('deleted-sandbox') };
  const handle = t.env.client.workflow.getHandle(leaseWorkflowId(pod.podUid, 'eth0'));
  const added = add('ctr-torn-down', GONE, pod).catch((err: unknown) => err);
  await untilActivating(pod.podUid);
  const began = Date.now();
  const removed = await handle.executeUpdate(deactivateUpdate, {
    args: [{ containerId: 'ctr-torn-down', ifName: 'eth0' }],
  });
  expect(Date.now() - began).toBeLessThan(8000); // not after the activation's ~22 s budget
  expect(removed).toBe(true);
  expect(deactivated).toContain('ctr-torn-down'); // what an attempt may have made is removed
  expect(await added).toBeInstanceOf(Error);
  const state = await handle.query(leaseStateQuery);
  expect([state.phase, state.attachments]).toEqual(['Produced', []]);
  expect(state.addresses).toEqual(addresses); // the pod's, until the pod is gone
  // The pod's next sandbox is answered as usual.
  const grant = await add('ctr-next', '/var/run/netns/next', pod);
  expect(grant.addresses).toEqual(addresses);
  await handle.signal(releaseSignal, { reason: 'test over' });
  await handle.result();
}, 60_000);

test('every history replays', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
