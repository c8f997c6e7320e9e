// Release and activation never overlap on one attachment, and an interface nobody owns does not
// stay: an activation held at a pause point while its activity is cancelled, while a deactivation
// comes, while its lease is released (the lease's own activation, and the agent's answer from an
// offer), and an answer the lease refuses to confirm. Real node agent worker, real shim, real
// veth pairs in namespaces this file makes; the kernel is read back with `ip -json`.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createDataplaneActivities } from '../../activities/dataplane';
import type { AttachmentInput, DataplaneActivities } from '../../domain/dataplane';
import { leaseWorkflowId } from '../../domain/ids';
import type { LeaseStart } from '../../domain/lease';
import { PAUSE_DIR_ENV, PAUSE_ENV } from '../../kernel/failpoint';
import { leaseStartOptions } from '../../temporal/leases';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery, releaseSignal } from '../../workflows/lease-messages';
import type { OfferBook } from '../../worker/agent/offers';
import { offerLease } from '../../worker/agent/pre-produce';
import { silentLog } from '../../observability/log';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, hostEnds, makeNetns, type TestNetns } from '../harness/netns';
import { runNodeAgent, type RunningNodeAgent } from '../harness/node-agent';
import { openTestOffers } from '../harness/offers';
import { expectReplayed } from '../harness/replay';
import { runShim } from '../harness/shim';
import { temporalAddress, uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
/** A node whose agent starts late: a lease's revocation waits for it meanwhile. */
const lateNode = uniqueName('node-late');
const ctx = withControlWorker('release-race', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 0.5, maximumAttempts: 3 },
}));
const pauses = mkdtempSync(join(tmpdir(), 'netlease-pauses-'));
let host: TestNetns;
let dataplane: Omit<DataplaneActivities, 'revokeOffer'>;
let offers: OfferBook;
const agents: RunningNodeAgent[] = [];
/** Every activation the agent's worker ran, settled or not. */
const activations: Array<Promise<unknown>> = [];

beforeAll(async () => {
  host = await makeNetns('host');
  dataplane = createDataplaneActivities({ hostNetns: host.name });
  offers = await openTestOffers(ctx.temporal.client, {
    activate: dataplane.activateAttachment,
    deactivate: dataplane.deactivateAttachment,
  });
  ctx.context.offers = offers;
  const watch = (activities: DataplaneActivities): DataplaneActivities => ({
    ...activities,
    activateAttachment: (input) => {
      const activation = activities.activateAttachment(input);
      activations.push(activation.catch(() => undefined));
      return activation;
    },
  });
  agents.push(await runNodeAgent(node, host.name, {}, offers, watch));
});
afterAll(async () => {
  resume();
  offers?.close();
  for (const agent of agents) await agent.stop();
  await deleteAllNetns();
});

/** Activations stop after `step` until resume(). */
function pauseAfter(step: string): void {
  process.env[PAUSE_ENV] = step;
  process.env[PAUSE_DIR_ENV] = pauses;
}
const paused = () =>
  waitForValue(
    async () => readdirSync(pauses),
    (files) => files.length > 0,
    30_000,
    50,
    'an activation at its pause point',
  );
function resume(): void {
  delete process.env[PAUSE_ENV];
  delete process.env[PAUSE_DIR_ENV];
  for (const file of readdirSync(pauses)) rmSync(join(pauses, file));
}

/** What the kernel holds of netlease's in the pod's and the host's namespaces: links and addresses. */
const kernelLeft = async (pod: TestNetns): Promise<string[]> =>
  [...(await pod.links()).filter((l) => l.ifname !== 'lo'), ...hostEnds(await host.links())].map(
    (l) => `${l.ifname}: ${(l.addr_info ?? []).map((a) => a.local).join(', ')}`,
  );

const podName = (uid: string) => `pod-${uid.slice(0, 8)}`;
const startOf = (uid: string, nodeName: string): LeaseStart => ({
  podUid: uid,
  podNamespace: 'race',
  podName: podName(uid),
  ifName: 'eth0',
  nodeName,
  pool: ctx.temporal.taskQueue,
  mode: 'ptp',
  network: 'netlease-test',
});
const handle = (uid: string) => ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'));

/** An activation's input as the lease sends it. */
const inputFor = (uid: string, pod: TestNetns): AttachmentInput => ({
  leaseId: leaseWorkflowId(uid, 'eth0'),
  start: startOf(uid, node),
  attachment: { containerId: `ctr-${uid}`, netns: pod.path, ifName: 'eth0' },
  addresses: [{ family: 4, address: '198.18.200.5', prefixLength: 26, gateway: '198.18.200.1' }],
  routes: [{ dst: '0.0.0.0/0' }],
});

const add = (uid: string, pod: TestNetns, nodeName = node) =>
  runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'race', K8S_POD_NAME: podName(uid), K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName, extra: { mode: 'ptp' } }),
  });

/** A lease started and offered as the pre-producer does for a pod bound to `nodeName`. */
async function offered(nodeName: string): Promise<string> {
  const uid = randomUUID();
  const start = startOf(uid, nodeName);
  await ctx.temporal.client.workflow.start(
    LEASE_WORKFLOW_TYPE,
    leaseStartOptions(ctx.temporal.taskQueue, start),
  );
  await offerLease(ctx.temporal.client, offers, start, silentLog());
  return uid;
}

const released = async (uid: string) => {
  await handle(uid).signal(releaseSignal, { reason: 'test: the pod is gone' });
  return handle(uid).result();
};

test('an activation whose activity is cancelled stops at its next step and removes the veth pair it made', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  pauseAfter('veth-created');
  const env = new MockActivityEnvironment();
  const activating = env.run(dataplane.activateAttachment, inputFor(uid, pod));
  await paused();
  expect(hostEnds(await host.links())).toHaveLength(1); // the pair exists, nothing configured yet
  env.cancel();
  resume(); // an activation that did not hear the cancellation would go on from here
  await expect(activating).rejects.toBeInstanceOf(CancelledFailure);
  expect(await kernelLeft(pod)).toEqual([]);
});

test('a deactivation that comes while an activation still runs stops it: nothing is made after it', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  pauseAfter('netns'); // like an attempt that timed out on the server and still runs here
  const activating = dataplane.activateAttachment(inputFor(uid, pod));
  activating.catch(() => undefined);
  await paused();
  await dataplane.deactivateAttachment(inputFor(uid, pod)); // returns while the activation is still paused
  resume();
  await expect(activating).rejects.toMatchObject({ type: 'ActivationSuperseded' });
  expect(await kernelLeft(pod)).toEqual([]);
});

test("a lease released during its activation: the activation stops, the release's deactivation finds nothing left", async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  pauseAfter('netns');
  const adding = add(uid, pod);
  await paused();
  expect(await released(uid)).toMatchObject({ phase: 'Released', attachments: [] });
  resume(); // the activation, if it still ran, would make the interface now
  await Promise.all(activations);
  expect((await adding).json).toMatchObject({ code: 11 });
  expect(await kernelLeft(pod)).toEqual([]);
});

test("a lease released while the agent makes the interface of its offer's answer: nothing is left", async () => {
  const uid = await offered(node);
  const pod = await makeNetns('pod');
  pauseAfter('netns');
  // The ADD's first step, as the CNI API takes it (its fallback, a new lease for a closed one, is
  // another lease's business): the agent activates the answer itself.
  const sandbox = { containerId: `ctr-${uid}`, netns: pod.path, ifName: 'eth0' };
  const taking = offers.take(startOf(uid, node), sandbox, {
    address: temporalAddress(),
    namespace: 'default',
  });
  await paused();
  expect(await released(uid)).toMatchObject({ phase: 'Released', attachments: [] });
  resume(); // the activation, if it still ran, would make the interface now
  expect(await taking).toBeUndefined(); // revoked: the ADD asks the lease
  expect(await kernelLeft(pod)).toEqual([]);
});

test('an answer the lease refuses (released first): the agent removes the interface it made', async () => {
  const uid = await offered(lateNode);
  // Released while no agent of its node runs: the release waits on the revocation, so the answer
  // below reaches a lease that is releasing.
  await handle(uid).signal(releaseSignal, { reason: 'test: the pod is gone' });
  await waitForValue(
    async () => (await handle(uid).query(leaseStateQuery)).phase,
    (phase) => phase === 'Releasing',
    10_000,
  );
  const pod = await makeNetns('pod');
  const outcome = await add(uid, pod, lateNode);
  expect(outcome.exitCode).toBe(0); // answered from the offer, interface made
  await offers.settled(leaseWorkflowId(uid, 'eth0'));
  expect(await kernelLeft(pod)).toEqual([]);
  agents.push(await runNodeAgent(lateNode, host.name, {}, offers)); // the release goes on
  expect(await handle(uid).result()).toMatchObject({ phase: 'Released' });
});

test('an answer to a lease that is gone (terminated): the agent removes the interface it made', async () => {
  const uid = await offered(lateNode);
  await handle(uid).terminate('test: an operator terminated the lease');
  const pod = await makeNetns('pod');
  expect((await add(uid, pod, lateNode)).exitCode).toBe(0);
  await offers.settled(leaseWorkflowId(uid, 'eth0'));
  expect(await kernelLeft(pod)).toEqual([]);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 5);
});
