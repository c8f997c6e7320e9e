// ptp mode through the real shim, a real node agent and real veth pairs in namespaces this test
// made: the host side lives in `host`, never in the machine's own namespace.
import { randomUUID } from 'node:crypto';
import { ip } from '../../kernel/ip';
import { globalAddresses, isUp, type Link } from '../../kernel/links';
import { leaseWorkflowId } from '../../domain/ids';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { hostEnds, makeNetns, ping, type TestNetns } from '../harness/netns';
import { withNodeAgent } from '../harness/node-agent';
import { runShim, type ShimCall } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { acceptedUpdates, scheduledCount } from '../harness/history';
import { waitForValue } from '../harness/wait';
import { uniqueName, withControlWorker } from '../harness/temporal';

const node = uniqueName('node');
const ctx = withControlWorker('ptp', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 1, maximumAttempts: 5 },
}));
const dataplane = withNodeAgent(node, undefined, ctx.context);

interface CniResultJson {
  interfaces: Array<{ name: string; mac: string; sandbox?: string }>;
  ips: Array<{ address: string; gateway: string; interface: number }>;
  routes: Array<{ dst: string; gw: string }>;
}

function call(command: string, uid: string, pod: TestNetns, nodeName = node): ShimCall {
  return {
    command,
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'ptp', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName, extra: { mode: 'ptp' } }),
  };
}

async function addPod(): Promise<{ uid: string; pod: TestNetns; result: CniResultJson }> {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const outcome = await runShim(call('ADD', uid, pod));
  expect(outcome.stderr).toBe('');
  expect(outcome.json).not.toHaveProperty('code');
  return { uid, pod, result: outcome.json as unknown as CniResultJson };
}

const linkNamed = (links: Link[], name: string) => links.find((l) => l.ifname === name);

test('ADD makes the veth pair with the lease addresses and routes; CHECK passes; DEL removes it, twice', async () => {
  const { uid, pod, result } = await addPod();
  const [hostEnd, podEnd] = result.interfaces;
  expect(podEnd).toMatchObject({ name: 'eth0', sandbox: pod.path });
  expect(result.ips.map((i) => i.interface)).toEqual([1, 1]);

  // Read back from the kernel, not from our own state.
  const eth0 = linkNamed(await pod.links(), 'eth0');
  expect(eth0?.address).toBe(podEnd?.mac);
  expect(eth0 && isUp(eth0)).toBe(true);
  expect(eth0 && globalAddresses(eth0)).toEqual(expect.arrayContaining(result.ips.map((i) => i.address)));
  const [v4, v6] = result.ips;
  expect(await pod.routes(4, 'eth0')).toEqual(
    expect.arrayContaining([expect.objectContaining({ dst: 'default', gateway: v4?.gateway })]),
  );
  expect(await pod.routes(6, 'eth0')).toEqual(
    expect.arrayContaining([expect.objectContaining({ dst: 'default', gateway: v6?.gateway })]),
  );
  const hostLink = linkNamed(await dataplane.host.links(), hostEnd?.name ?? '?');
  expect(hostLink?.address).toBe(hostEnd?.mac);
  expect(hostLink && globalAddresses(hostLink)).toEqual(
    expect.arrayContaining([`${v4?.gateway}/32`, `${v6?.gateway}/128`]),
  );
  const podV4 = v4?.address.split('/')[0];
  expect(await dataplane.host.routes(4, hostEnd?.name ?? '?')).toEqual(
    expect.arrayContaining([expect.objectContaining({ dst: podV4 })]),
  );

  const check = await runShim({
    ...call('CHECK', uid, pod),
    stdin: { ...(call('CHECK', uid, pod).stdin as object), prevResult: result },
  });
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: '' });

  // Someone removes the address: CHECK reports exactly that.
  await ip(pod.name, ['addr', 'del', v4?.address ?? '?', 'dev', 'eth0']);
  const broken = await runShim(call('CHECK', uid, pod));
  expect(broken.json).toMatchObject({
    code: 102,
    msg: expect.stringContaining(`lacks address ${v4?.address}`),
  });

  for (let i = 0; i < 2; i++) {
    const del = await runShim(call('DEL', uid, pod));
    expect({ code: del.exitCode, out: del.stdout }).toEqual({ code: 0, out: '' });
  }
  expect(linkNamed(await pod.links(), 'eth0')).toBeUndefined();
  expect(hostEnds(await dataplane.host.links()).map((l) => l.ifname)).not.toContain(hostEnd?.name);
  const state = await ctx.temporal.client.workflow
    .getHandle(leaseWorkflowId(uid, 'eth0'))
    .query(leaseStateQuery);
  expect(state.phase).toBe('Produced');
});

test("one ADD path: the agent makes a cold ADD's interface and confirms it; the lease runs no activation", async () => {
  const { uid, pod } = await addPod();
  const id = leaseWorkflowId(uid, 'eth0');
  const handle = ctx.temporal.client.workflow.getHandle(id);
  const state = await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Active',
    30_000,
  );
  // The lease records what the agent made: the links the kernel holds.
  const eth0 = linkNamed(await pod.links(), 'eth0');
  const [attachment] = state.attachments;
  expect(attachment?.status).toBe('active');
  expect(attachment?.links?.container).toEqual({ name: 'eth0', mac: eth0?.address, sandbox: pod.path });
  expect(await acceptedUpdates(ctx.temporal.client, id)).toEqual(['consume', 'confirmAnswer']);
  expect(await scheduledCount(ctx.temporal.client, id, 'activateAttachment')).toBe(0);
});

// Found by fuzzing (issue 18): the kernel takes control characters in interface names, and
// iproute2 prints them raw in its JSON, which JSON.parse refused: once such a link was in a
// namespace, every read of it failed (CHECK answered 999, activation and DEL could not look).
test('an interface named with a control character: ADD, CHECK and DEL read it back', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const named = { ...call('ADD', uid, pod), ifName: 'a\u0001b' };
  const added = await runShim(named);
  expect(added.json).not.toHaveProperty('code');
  expect((await pod.links()).map((l) => l.ifname).sort()).toEqual(['a\u0001b', 'lo']);
  const checked = await runShim({ ...named, command: 'CHECK' });
  expect({ exit: checked.exitCode, out: checked.stdout }).toEqual({ exit: 0, out: '' });
  const deleted = await runShim({ ...named, command: 'DEL' });
  expect({ exit: deleted.exitCode, out: deleted.stdout }).toEqual({ exit: 0, out: '' });
  expect((await pod.links()).map((l) => l.ifname)).toEqual(['lo']);
});

test('two pods on one node reach each other through the ptp routes, IPv4 and IPv6', async () => {
  const a = await addPod();
  const b = await addPod();
  for (const target of b.result.ips.map((i) => i.address.split('/')[0] ?? '?'))
    await ping(a.pod.name, target);
  for (const target of a.result.ips.map((i) => i.address.split('/')[0] ?? '?'))
    await ping(b.pod.name, target);
});

test('STATUS succeeds with the node agent polling, and is 50 for a node without one', async () => {
  const pod = await makeNetns('pod');
  const ok = await runShim(call('STATUS', randomUUID(), pod));
  expect({ code: ok.exitCode, out: ok.stdout }).toEqual({ code: 0, out: '' });
  const orphan = await runShim(call('STATUS', randomUUID(), pod, uniqueName('agentless')));
  expect(orphan.json).toMatchObject({ code: 50, msg: expect.stringMatching(/no node agent/) });
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 2);
});
