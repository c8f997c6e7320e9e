// Pool selection on the dev stack (domain/pool-selection): two pools whose node selectors name a
// region each, two nodes of those regions, each with its own node agent process (ptp, real
// shim, real network namespaces) that pre-produces with no pool named. A namespace annotation
// naming both pools gives each pod the pool of its node's region, read back from the kernel and
// from the lease, and the agents' pre-produced guesses are the same pools; a pod annotation naming the other region's pool is refused with the reason
// (calico#10502: never the wrong region's address) and no lease workflow is started; an
// annotation naming no served pool is an error naming the annotation.
import { WorkflowNotFoundError } from '@temporalio/client';
import { globalAddresses } from '../../kernel/links';
import { leaseWorkflowId } from '../../domain/ids';
import { acceptedUpdates } from '../harness/history';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import type { NodeAgentProcess } from '../harness/node-agent';
import { offersOnDisk } from '../harness/offers';
import { expectReplayed } from '../harness/replay';
import {
  callThrough,
  startPreProducingAgent,
  stopPreProducingAgents,
  type PreProducingAgent,
} from '../harness/pre-producing-agents';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const EU = uniqueName('eu');
const US = uniqueName('us');
const REGIONS = [
  { region: 'eu', pool: EU, node: uniqueName('node-eu'), prefix: '10.201.' },
  { region: 'us', pool: US, node: uniqueName('node-us'), prefix: '10.202.' },
] as const;
type Region = (typeof REGIONS)[number];

let scenario: Scenario;
const agents = new Map<string, PreProducingAgent>();

beforeAll(async () => {
  scenario = await Scenario.create('pool-selection', {
    morePools: [
      { name: EU, cidrs: ['10.201.0.0/16'], nodeSelector: { matchLabels: { region: 'eu' } } },
      { name: US, cidrs: ['10.202.0.0/16'], nodeSelector: { matchLabels: { region: 'us' } } },
    ],
  });
  await scenario.cluster.markNamespace({ annotations: { 'netlease.io/pools': `${EU},${US}` } });
  for (const { region, node } of REGIONS) {
    await scenario.cluster.createNode(node, { labels: { region } });
    const preProduce = { network: 'netlease-test' };
    agents.set(
      node,
      await startPreProducingAgent(node, scenario.temporal.taskQueue, `select-${region}`, preProduce),
    );
  }
}, 90_000);
afterAll(async () => {
  await stopPreProducingAgents(agents.values());
  await scenario?.close();
  await deleteAllNetns();
});

const updatesOf = (uid: string) => acceptedUpdates(scenario.temporal.client, leaseWorkflowId(uid, 'eth0'));

/** The pod's ADD through its node's agent, with a network config that names no pool. */
const add = (pod: { name: string; uid: string }, where: Region, netns: TestNetns) =>
  callThrough(agents.get(where.node) as PreProducingAgent, 'ADD', {
    taskQueue: scenario.temporal.taskQueue,
    nodeName: where.node,
    pod: { namespace: scenario.cluster.namespace, ...pod },
    netnsPath: netns.path,
    pool: undefined,
  });

test.each(REGIONS)(
  'a namespace annotation naming both pools: a pod on the $region node gets the $region pool, in the kernel and the lease',
  async (where) => {
    const name = `web-${where.region}`;
    const pod = { name, uid: await scenario.cluster.createPod(name, where.node) };
    // The agent's guess, by the same selection: the lease is produced in the pod's pool and offered.
    await waitForValue(
      () => offersOnDisk(agents.get(where.node)?.offerDir ?? ''),
      (held) => held === 1,
      30_000,
    );
    expect((await scenario.leaseState(pod.uid)).start.pool).toBe(where.pool);
    const netns = await makeNetns(name);
    const outcome = await add(pod, where, netns);
    expect({ exitCode: outcome.exitCode, msg: outcome.json?.msg }).toEqual({ exitCode: 0, msg: undefined });
    const told = (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0]);
    expect(told).toHaveLength(1);
    expect(told[0]?.startsWith(where.prefix)).toBe(true);
    const eth0 = (await netns.links()).find((l) => l.ifname === 'eth0');
    expect(eth0 && globalAddresses(eth0).map((a) => a.split('/')[0])).toEqual(told);
    const lease = await scenario.waitForPhase(pod.uid, 'Active', 30_000);
    expect(lease.start.pool).toBe(where.pool);
    expect(lease.addresses.map((a) => a.address)).toEqual(told);
    expect(await updatesOf(pod.uid)).toEqual(['offer', 'confirmAnswer']); // answered from the guess
  },
  60_000,
);

/** No lease workflow of the pod ever started (not by the ADD, not by the agent's pre-producer). */
async function noLease(uid: string) {
  const describe = scenario.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0')).describe();
  await expect(describe).rejects.toBeInstanceOf(WorkflowNotFoundError);
}

test("calico#10502: a pod annotation naming the other region's pool is refused with the reason, and nothing starts", async () => {
  const [eu] = REGIONS;
  const name = 'wrong-region';
  const annotations = { 'netlease.io/pools': US };
  const pod = { name, uid: await scenario.cluster.createPod(name, eu.node, { annotations }) };
  const netns = await makeNetns(name);
  const outcome = await add(pod, eu, netns);
  expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 7 });
  expect(outcome.json?.msg).toBe(
    `no-pool-for-pod: pod ${scenario.cluster.namespace}/${name} on node ${eu.node}: its annotation netlease.io/pools ` +
      `names no pool for it: pool ${US}: node ${eu.node} does not match its nodeSelector: region=us (has region=eu)`,
  );
  expect((await netns.links()).map((l) => l.ifname)).toEqual(['lo']);
  await noLease(pod.uid);
  const agent = agents.get(eu.node) as { process: NodeAgentProcess };
  expect(agent.process.output()).toContain('"msg":"not pre-produced: no pool for the pod"');
}, 60_000);

test('an annotation naming no served pool is an error naming the annotation', async () => {
  const [, us] = REGIONS;
  const name = 'typo';
  const annotations = { 'netlease.io/pools': 'no-such-pool' };
  const pod = { name, uid: await scenario.cluster.createPod(name, us.node, { annotations }) };
  const outcome = await add(pod, us, await makeNetns(name));
  expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 1, code: 7 });
  expect(outcome.json?.msg).toMatch(
    new RegExp(
      `^invalid-pool-annotation: pod ${scenario.cluster.namespace}/typo's annotation netlease.io/pools: names "no-such-pool", which the control plane does not serve \\(it serves `,
    ),
  );
  await noLease(pod.uid);
}, 60_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 4);
});
