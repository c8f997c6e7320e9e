// A pre-produced ptp lease offered to the node agent: the pod's first ADD is answered by the agent,
// which makes the interface itself and confirms it to the lease. When its own activation fails,
// the ADD takes the lease's path and nothing is lost: the lease's activation retries and parks,
// and `retry` finishes it. Real shim, real node agent worker, veth pairs in namespaces made here.
import { randomUUID } from 'node:crypto';
import { createDataplaneActivities } from '../../activities/dataplane';
import type { OfferBook } from '../../worker/agent/offers';
import { leaseWorkflowId } from '../../domain/ids';
import type { LeaseStart } from '../../domain/lease';
import { globalAddresses } from '../../kernel/links';
import { silentLog } from '../../observability/log';
import { leaseStartOptions } from '../../temporal/leases';
import {
  LEASE_WORKFLOW_TYPE,
  leaseStateQuery,
  releaseSignal,
  retrySignal,
} from '../../workflows/lease-messages';
import { offerLease } from '../../worker/agent/pre-produce';
import { scheduledCount } from '../harness/history';
import { netconf } from '../harness/netconf';
import { openTestOffers } from '../harness/offers';
import { futureNetns, hostEnds, makeNetns, deleteAllNetns, type TestNetns } from '../harness/netns';
import { runNodeAgent, type RunningNodeAgent } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { runShim } from '../harness/shim';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
const ctx = withControlWorker('ptp-offer', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 0.5, maximumAttempts: 3 },
}));
let host: TestNetns;
let agent: RunningNodeAgent | undefined;
let offers: OfferBook;

beforeAll(async () => {
  host = await makeNetns('host');
  offers = await openTestOffers(ctx.temporal.client, {
    activate: createDataplaneActivities({ hostNetns: host.name }).activateAttachment,
  });
  ctx.context.offers = offers;
  agent = await runNodeAgent(node, host.name, {}, offers);
});
afterAll(async () => {
  offers?.close();
  await agent?.stop();
  await deleteAllNetns();
});

const podName = (uid: string) => `pod-${uid.slice(0, 8)}`;
const handle = (uid: string) => ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'));
const phaseOf = async (uid: string) => (await handle(uid).query(leaseStateQuery)).phase;

/** A lease started and offered as the pre-producer does for a pod bound to the node. */
async function offered(): Promise<string> {
  const uid = randomUUID();
  const start: LeaseStart = {
    podUid: uid,
    podNamespace: 'ptp',
    podName: podName(uid),
    ifName: 'eth0',
    nodeName: node,
    pool: ctx.temporal.taskQueue,
    mode: 'ptp',
    network: 'netlease-test',
  };
  await ctx.temporal.client.workflow.start(
    LEASE_WORKFLOW_TYPE,
    leaseStartOptions(ctx.temporal.taskQueue, start),
  );
  await offerLease(ctx.temporal.client, offers, start, silentLog());
  return uid;
}

const shim = (command: string, uid: string, pod: TestNetns) =>
  runShim({
    command,
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'ptp', K8S_POD_NAME: podName(uid), K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp' } }),
  });

test('the agent answers the first ADD from the offer and makes the interface itself; DEL removes it', async () => {
  const uid = await offered();
  const pod = await makeNetns('pod');
  const outcome = await shim('ADD', uid, pod);
  expect(outcome.exitCode).toBe(0);
  const result = outcome.json as { interfaces: Array<{ name: string }>; ips: Array<{ address: string }> };
  expect(result.interfaces.map((i) => i.name)).toContain('eth0');
  const eth0 = (await pod.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0)).toEqual(expect.arrayContaining(result.ips.map((i) => i.address)));
  expect(hostEnds(await host.links())).toHaveLength(1);
  // Confirmed: the lease is Active with the agent's links, and it never ran an activation itself.
  await waitForValue(
    () => phaseOf(uid),
    (p) => p === 'Active',
    30_000,
  );
  const state = await handle(uid).query(leaseStateQuery);
  expect(state.attachments[0]?.links?.container.name).toBe('eth0');
  expect(await scheduledCount(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'activateAttachment')).toBe(
    0,
  );

  expect((await shim('DEL', uid, pod)).exitCode).toBe(0);
  expect((await pod.links()).find((l) => l.ifname === 'eth0')).toBeUndefined();
  expect(hostEnds(await host.links())).toEqual([]);
  await handle(uid).signal(releaseSignal, { reason: 'test over' });
  expect(await handle(uid).result()).toMatchObject({ phase: 'Released' });
}, 90_000);

test("the agent's activation fails: the ADD takes the lease's path, which parks; retry finishes it", async () => {
  const uid = await offered();
  const pod = futureNetns('late'); // the runtime has not made the namespace yet
  const outcome = await shim('ADD', uid, pod);
  expect(outcome.json).toMatchObject({ code: 11 });
  expect(await phaseOf(uid)).toBe('ActivationFailed');
  expect(await scheduledCount(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'activateAttachment')).toBe(
    1,
  );

  await pod.create();
  await handle(uid).signal(retrySignal);
  await waitForValue(
    () => phaseOf(uid),
    (p) => p === 'Active',
    30_000,
  );
  expect((await pod.links()).find((l) => l.ifname === 'eth0')).toBeDefined();
  await handle(uid).signal(releaseSignal, { reason: 'test over' });
  expect(await handle(uid).result()).toMatchObject({ phase: 'Released' });
  expect(hostEnds(await host.links())).toEqual([]); // release deactivated it
}, 90_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 2);
});
