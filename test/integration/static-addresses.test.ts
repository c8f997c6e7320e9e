// Static addresses on the dev stack (issue 29 item 2, domain/static-addresses): two nodes, each
// with its own node agent process (ptp, real shim, real network namespaces, pre-producing). A pod
// annotated `netlease.io/ip-addresses` gets that address, read back from the kernel and the lease;
// outside a block its node holds, the address comes as a pinned one-address block the pool's
// table holds. Another pod asking for it is answered 11 `static-address-held` naming where it is,
// and gets it once the first pod is gone and the address has cooled down (its pinned block back in
// the pool), on the other node; the refusal names the pod that holds it there. An address the pool
// cannot hand out is error 7 and starts nothing.
import { WorkflowNotFoundError } from '@temporalio/client';
import { globalAddresses } from '../../kernel/links';
import { leaseWorkflowId, poolWorkflowId } from '../../domain/ids';
import { poolStateQuery } from '../../workflows/pool-messages';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import type { NodeAgentProcess } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import {
  callThrough,
  nodesWithAgents,
  stopPreProducingAgents,
  type PreProducingAgent,
} from '../harness/pre-producing-agents';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const ANNOTATION = 'netlease.io/ip-addresses';
const NODES = [uniqueName('static-a'), uniqueName('static-b')] as const;
/** In a block no node holds when the test starts (blocks are handed from 198.18.0.0 up). */
const FAR = '198.18.200.10';
/** What an ADD of a static IPv4 address tells: it, and an IPv6 address of the dual-stack pool as ever. */
const answerOf = (v4: string) => [`${v4}/26`, expect.stringMatching(/^fd00:18::[0-9a-f]+\/120$/)];

let scenario: Scenario;
let agents = new Map<string, PreProducingAgent>();

beforeAll(async () => {
  scenario = await Scenario.create('static-addresses', { reuseCooldownSeconds: 2 });
  agents = await nodesWithAgents(scenario, NODES, 'static');
}, 90_000);
afterAll(async () => {
  await stopPreProducingAgents(agents.values());
  await scenario?.close();
  await deleteAllNetns();
});

interface Pod {
  name: string;
  uid: string;
  node: string;
  netns: TestNetns;
}

async function createPod(name: string, node: string, addresses?: string): Promise<Pod> {
  const annotations: Record<string, string> = addresses === undefined ? {} : { [ANNOTATION]: addresses };
  const uid = await scenario.cluster.createPod(name, node, { annotations });
  return { name, uid, node, netns: await makeNetns(name) };
}

/** The pod's CNI call through its node's agent (ptp, the scenario's pool). */
const call = (command: 'ADD' | 'DEL', pod: Pod) =>
  callThrough(agents.get(pod.node) as PreProducingAgent, command, {
    taskQueue: scenario.temporal.taskQueue,
    nodeName: pod.node,
    pod: { namespace: scenario.cluster.namespace, name: pod.name, uid: pod.uid },
    netnsPath: pod.netns.path,
    pool: scenario.temporal.taskQueue,
  });

/** The ADD succeeds: what it told, read back from the kernel's eth0 and from the lease. */
async function addedAddresses(pod: Pod): Promise<string[]> {
  const outcome = await call('ADD', pod);
  expect({ exitCode: outcome.exitCode, msg: outcome.json?.msg }).toEqual({ exitCode: 0, msg: undefined });
  const told = (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address);
  const eth0 = (await pod.netns.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0)).toEqual(told);
  const lease = await scenario.waitForPhase(pod.uid, 'Active', 30_000);
  expect(lease.addresses.map((a) => `${a.address}/${a.prefixLength}`)).toEqual(told);
  return told;
}

const poolBlocks = async () =>
  (
    await scenario.temporal.client.workflow
      .getHandle(poolWorkflowId(scenario.temporal.taskQueue))
      .query(poolStateQuery)
  ).blocks;

const ownBlocks = async (node: string) => ((await scenario.table(node))?.blocks ?? []).map((b) => b.cidr);

const noLease = (uid: string) =>
  expect(
    scenario.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0')).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);

/** The Events the API server holds about this pod. */
async function podEvents(pod: Pod) {
  const list = await scenario.cluster.clients.core.listNamespacedEvent({
    namespace: scenario.cluster.namespace,
    fieldSelector: `involvedObject.uid=${pod.uid}`,
  });
  return list.items;
}

let first: Pod;

test('a static address outside the blocks its node holds: told as in its pool block, held as a pinned block', async () => {
  first = await createPod('fixed-a', NODES[0], FAR);
  // 198.18.200.0/26: .1 the gateway; the host end of the veth holds it.
  expect(await addedAddresses(first)).toEqual(answerOf(FAR));
  expect(await ownBlocks(NODES[0])).toContain(`${FAR}/32`);
  expect((await poolBlocks())[`${FAR}/32`]).toMatchObject({ node: NODES[0] });
  // Pre-produced by its agent with the same terms: the guess held the address before the ADD.
  expect((await scenario.leaseState(first.uid)).start.staticAddresses).toBe(FAR);
}, 60_000);

test('another pod asking for it on the other node: 11 static-address-held, naming where it is; nothing made', async () => {
  const second = await createPod('fixed-b', NODES[1], FAR);
  const outcome = await call('ADD', second);
  expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 11 });
  expect(outcome.json?.msg).toContain(
    `static-address-held: ${FAR} is in block ${FAR}/32 of node ${NODES[0]}`,
  );
  // The holder named, as its node's table and lease hold it.
  expect(outcome.json?.msg).toContain(
    `held there by pod ${scenario.cluster.namespace}/${first.name} (UID ${first.uid}, lease ${leaseWorkflowId(first.uid, 'eth0')})`,
  );
  expect((await second.netns.links()).map((l) => l.ifname)).toEqual(['lo']);
  expect(await ownBlocks(NODES[1])).not.toContain(`${FAR}/32`);
  // The node agent says the same on the pod, as for every refusal.
  const events = await waitForValue(
    () => podEvents(second),
    (found) => found.length > 0,
    20_000,
  );
  expect(events).toEqual([
    expect.objectContaining({ type: 'Warning', reason: 'StaticAddressHeld', message: outcome.json?.msg }),
  ]);

  // The first pod goes (its DEL, then the Pod object); the address cools down, its pinned block
  // goes back to the pool, and the second pod's retried ADD gets it on the other node.
  expect((await call('DEL', first)).exitCode).toBe(0);
  await scenario.deletedAndReleased(first);
  await waitForValue(poolBlocks, (blocks) => blocks[`${FAR}/32`] === undefined, 30_000);
  expect(await ownBlocks(NODES[0])).not.toContain(`${FAR}/32`);
  expect(await addedAddresses(second)).toEqual(answerOf(FAR));
  expect((await poolBlocks())[`${FAR}/32`]).toMatchObject({ node: NODES[1] });
}, 90_000);

test('an address in a block its node holds comes from that block; the other node is told whose block it is', async () => {
  const dynamic = await createPod('dynamic-a', NODES[0]);
  const [v4] = await addedAddresses(dynamic);
  const block = (await ownBlocks(NODES[0])).find((b) => b.endsWith('/26'));
  expect(block && v4?.endsWith('/26')).toBe(true);
  const inBlock = (v4 ?? '').replace(/\.\d+\/26$/, '.40');
  const near = await createPod('fixed-near', NODES[0], inBlock);
  expect(await addedAddresses(near)).toEqual(answerOf(inBlock));
  expect(await ownBlocks(NODES[0])).not.toContain(`${inBlock}/32`);

  const far = await createPod('fixed-far', NODES[1], inBlock.replace(/\.40$/, '.41'));
  const outcome = await call('ADD', far);
  expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 11 });
  expect(outcome.json?.msg).toContain(`is in block ${block} of node ${NODES[0]}`);
  expect(outcome.json?.msg).toContain('no pod holds it there');
}, 90_000);

test.each([
  ['10.9.9.9', `10.9.9.9 is outside pool`],
  ['198.18.200.1', '198.18.200.1 is the gateway of its block 198.18.200.0/26'],
  ['198.18.0.7,198.18.0.8', 'names more than one IPv4 address (one per family)'],
])(
  'an annotation naming %s is error 7 with the reason, and nothing starts',
  async (addresses, why) => {
    const pod = await createPod(`bad-${addresses.replace(/[.,]/g, '-')}`, NODES[1], addresses);
    const outcome = await call('ADD', pod);
    expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 7 });
    expect(outcome.json?.msg).toContain(
      `invalid-static-address: pod ${scenario.cluster.namespace}/${pod.name}'s annotation ${ANNOTATION}: ${why}`,
    );
    await noLease(pod.uid);
    const { process } = agents.get(NODES[1]) as { process: NodeAgentProcess };
    expect(process.output()).toContain('"msg":"not pre-produced: its static addresses are refused"');
  },
  60_000,
);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 8);
});
