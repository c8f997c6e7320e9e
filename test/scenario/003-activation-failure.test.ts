// Seed 003 (Mizar): an interface lost when activation failed half-way. Activation fails for real
// here (the pod's netns appears late; a foreign link holds the name), is retried with backoff,
// parks in ActivationFailed with its address still reserved, and the `retry` signal finishes it.
import { randomUUID } from 'node:crypto';
import { ip } from '../../kernel/ip';
import { globalAddresses } from '../../kernel/links';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { LeasePhase } from '../../domain/search-attributes';
import { leaseStateQuery, retrySignal } from '../../workflows/lease-messages';
import { nodeStateQuery } from '../../workflows/node-messages';
import { currentDetails, pendingAttempt, scheduledCount } from '../harness/history';
import { netconf } from '../harness/netconf';
import { futureNetns, makeNetns, type TestNetns } from '../harness/netns';
import { withNodeAgent } from '../harness/node-agent';
import { runShim, type ShimCall, type ShimOutcome } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
// Attempts at about 0, 2, 6 and 10 s, then the lease parks.
const ctx = withControlWorker('s003', () => ({
  activation: {
    initialIntervalSeconds: 2,
    maximumIntervalSeconds: 4,
    maximumAttempts: 4,
    attemptTimeoutSeconds: 10,
  },
}));
withNodeAgent(node); // the pods below are activated by it, host side in its namespace

function add(uid: string, containerId: string, pod: TestNetns): Promise<ShimOutcome> {
  const call: ShimCall = {
    command: 'ADD',
    containerId,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 's003', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp' } }),
  };
  return runShim(call);
}

const handleOf = (uid: string) => ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'));
const cidrs = (addresses: Array<{ address: string; prefixLength: number }>) =>
  addresses.map((a) => `${a.address}/${a.prefixLength}`);
const ipsOf = (json: Record<string, unknown> | undefined) =>
  ((json?.ips ?? []) as Array<{ address: string }>).map((i) => i.address);

/** An eth0 netlease did not make (a veth pair inside the pod's namespace); returns its MAC. */
async function addForeignEth0(pod: TestNetns): Promise<string | undefined> {
  await ip(pod.name, ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'foreign0']);
  return (await pod.links()).find((l) => l.ifname === 'eth0')?.address;
}

async function eth0Addresses(pod: TestNetns): Promise<string[]> {
  const link = (await pod.links()).find((l) => l.ifname === 'eth0');
  return link ? globalAddresses(link) : [];
}

async function reservedFor(uid: string): Promise<string[]> {
  const state = await ctx.temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery);
  const allocations = Object.values(state.tables[ctx.temporal.taskQueue]?.allocations ?? {});
  return allocations.filter((a) => a.owner === leaseWorkflowId(uid, 'eth0')).map((a) => a.address);
}

test('003 the netns appears late: activation retries and the lease becomes Active with its first reservation', async () => {
  const uid = randomUUID();
  const pod = futureNetns('late');
  const adding = add(uid, `ctr-${uid}`, pod);
  const failing = await waitForValue(
    () =>
      pendingAttempt(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'activateAttachment').catch(
        () => undefined,
      ),
    (p) => (p?.attempt ?? 0) >= 2,
    30_000,
  );
  expect(failing?.lastFailure).toMatch(/network namespace .* does not exist/);
  const reservedBefore = cidrs((await handleOf(uid).query(leaseStateQuery)).addresses);
  await pod.create();

  const outcome = await adding;
  expect(outcome.json).not.toHaveProperty('code');
  expect(ipsOf(outcome.json)).toEqual(reservedBefore);
  expect(await eth0Addresses(pod)).toEqual(expect.arrayContaining(reservedBefore));
  expect((await handleOf(uid).query(leaseStateQuery)).phase).toBe('Active');
  expect(await scheduledCount(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'produceAddresses')).toBe(1);
});

test('003 budget spent: ActivationFailed with the error, address kept, ADD gets 11; the retry signal makes it Active', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('conflict');
  await addForeignEth0(pod);

  const parked = await add(uid, `ctr-${uid}`, pod);
  expect(parked.json).toMatchObject({
    code: 11,
    msg: expect.stringMatching(/activation failed.*not netlease's/),
  });
  const state = await handleOf(uid).query(leaseStateQuery);
  expect(state.phase).toBe('ActivationFailed');
  expect(state.attachments.map((a) => a.status)).toEqual(['parked']);
  expect(state.lastError).toMatch(/eth0 in .* exists and is not netlease's/);
  expect(await currentDetails(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'))).toMatch(
    /^ActivationFailed: eth0 in .* exists and is not netlease's .*Remedy: .*`retry` signal/,
  );
  const attributes = await waitForValue(
    async () => (await handleOf(uid).describe()).typedSearchAttributes.get(LeasePhase),
    (phase) => phase === 'ActivationFailed',
    10_000,
  );
  expect(attributes).toBe('ActivationFailed');
  const reserved = state.addresses.map((a) => a.address);
  expect((await reservedFor(uid)).sort()).toEqual([...reserved].sort());

  // The operator removes the foreign link and sends `retry` (the UI's Signal form does the same).
  await ip(pod.name, ['link', 'del', 'eth0']);
  await handleOf(uid).signal(retrySignal);
  const active = await waitForValue(
    () => handleOf(uid).query(leaseStateQuery),
    (s) => s.phase === 'Active',
    30_000,
  );
  expect(active.phase).toBe('Active');
  expect(active.addresses).toEqual(state.addresses);
  expect(await eth0Addresses(pod)).toEqual(expect.arrayContaining(cidrs(active.addresses)));

  // The runtime retries its ADD and now gets the result, with the same addresses.
  const retried = await add(uid, `ctr-${uid}`, pod);
  expect(ipsOf(retried.json)).toEqual(cidrs(active.addresses));
  expect(await scheduledCount(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'produceAddresses')).toBe(1);
});

test('003 a new sandbox of a parked pod activates with the same address', async () => {
  const uid = randomUUID();
  const broken = await makeNetns('conflict');
  const foreignMac = await addForeignEth0(broken);
  const parked = await add(uid, `old-${uid}`, broken);
  expect(parked.json).toMatchObject({ code: 11 });
  const reserved = cidrs((await handleOf(uid).query(leaseStateQuery)).addresses);

  const fresh = await makeNetns('fresh');
  const recreated = await add(uid, `new-${uid}`, fresh);
  expect(recreated.json).not.toHaveProperty('code');
  expect(ipsOf(recreated.json)).toEqual(reserved);
  expect(await eth0Addresses(fresh)).toEqual(expect.arrayContaining(reserved));
  // The foreign link in the old sandbox is left alone.
  expect((await broken.links()).find((l) => l.ifname === 'eth0')?.address).toBe(foreignMac);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 3);
});
