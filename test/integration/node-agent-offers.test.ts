// The node agent as its own process (node dist/worker/agent/node-agent.js) with `preProduce`: it
// watches the pods bound to its node, holds their leases' grants as offers in its offerDir,
// answers a first ADD from the offer through the real shim, and revokes the offer of a pod
// deleted before its ADD with the same activities its worker runs. An ADD of other terms than an
// offer nobody took (network, mode, pool: the agent's preProduce and the node's conflist are two
// files) withdraws the guess and is served on its own terms; once a runtime was told a lease's
// addresses, an ADD of other terms is refused naming both sides, and changes nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { globalAddresses } from '../../kernel/links';
import { leaseWorkflowId } from '../../domain/ids';
import { acceptedUpdates, scheduledCount } from '../harness/history';
import { kubeconfigPath } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { offersOnDisk } from '../harness/offers';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { podCall, runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { waitFor } from '../../tools/processes';
import { conflist, NetworkSchema } from '../../worker/agent/install-cni';

const node = uniqueName('node');
/** A second pool the control plane serves: an ADD naming it is for other terms than the offer's. */
const V6ONLY = uniqueName('v6only');
const dir = mkdtempSync(join(tmpdir(), 'netlease-agent-offers-'));
const offerDir = join(dir, 'offers');
const paths: AgentCniPaths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
// The conflist the agent compares its preProduce with: install-cni's, in ptp mode where the agent
// pre-produces ipam leases, so it warns at start-up (this file's ADDs bring their own configs).
const conflistPath = join(dir, '10-netlease.conflist');
let scenario: Scenario;
let agent: NodeAgentProcess;
let host: TestNetns;

beforeAll(async () => {
  scenario = await Scenario.create('agent-offers', {
    morePools: [{ name: V6ONLY, cidrs: ['fd00:19::/64'] }],
  });
  await scenario.cluster.createNode(node);
  host = await makeNetns('agent-offers-host');
  const network = { name: 'netlease-test', mode: 'ptp', pool: scenario.temporal.taskQueue };
  writeFileSync(conflistPath, JSON.stringify(conflist(NetworkSchema.parse(network))));
  agent = startNodeAgentProcess(node, host.name, {}, { taskQueue: scenario.temporal.taskQueue }, paths, {
    offerDir,
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: {
      network: 'netlease-test',
      pool: scenario.temporal.taskQueue,
      mode: 'ipam',
      conflist: conflistPath,
    },
  });
  const watching = await waitFor(() => agent.output().includes('"msg":"pre-producing leases"'), 30_000);
  if (!watching) throw new Error(`node agent did not start pre-producing: ${agent.output()}`);
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  await scenario?.close();
  await deleteAllNetns();
});

const updatesOf = (uid: string) => acceptedUpdates(scenario.temporal.client, leaseWorkflowId(uid, 'eth0'));
/** The pod's lease, started by the agent's pre-producer, has been offered to the agent. */
async function offered(uid: string) {
  await scenario.waitForPhase(uid, 'Produced', 30_000);
  return waitForValue(
    () => updatesOf(uid),
    (names) => names.includes('offer'),
    30_000,
  );
}
const offersLeft = (count: number) =>
  waitForValue(
    () => offersOnDisk(offerDir),
    (n) => n === count,
    10_000,
  );

test('at start-up the agent warns that its preProduce does not match the conflist, naming both sides', () => {
  const lines = agent
    .output()
    .split('\n')
    .filter((line) => line.includes(conflistPath))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const pool = scenario.temporal.taskQueue;
  expect(lines).toEqual([
    expect.objectContaining({
      level: 'warn',
      conflist: conflistPath,
      msg:
        `preProduce differs from ${conflistPath} in mode: preProduce is network netlease-test (ipam, pool ${pool}, eth0), ` +
        `the conflist network netlease-test (ptp, pool ${pool}, eth0); pods' ADDs will not match the leases pre-produced for them`,
    }),
  ]);
});

test("a bound pod's first ADD is answered by the agent process from its offer and confirmed", async () => {
  const uid = await scenario.cluster.createPod('early', node);
  await offered(uid);
  const produced = await scenario.leaseState(uid);
  expect(await offersLeft(1)).toBe(1); // written once the offer update has returned

  const outcome = await runShim(
    podCall(
      'ADD',
      { namespace: scenario.cluster.namespace, name: 'early', uid },
      {
        ...netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
        agentSocket: paths.cniSocket,
        deleteQueue: paths.deleteQueue,
      },
    ),
  );
  expect(outcome.exitCode).toBe(0);
  const ips = (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0]);
  expect(ips).toEqual(produced.addresses.map((a) => a.address));
  const active = await scenario.waitForPhase(uid, 'Active', 30_000);
  expect(active.attachments.map((a) => a.containerId)).toEqual([`ctr-${uid}`]);
  expect(await updatesOf(uid)).toEqual(['offer', 'confirmAnswer']);
  expect(await offersLeft(0)).toBe(0);
}, 60_000);

test('a pod deleted before its ADD: the agent process revokes its offer and the lease is released', async () => {
  const uid = await scenario.cluster.createPod('never-added', node);
  await offered(uid);
  expect(await offersLeft(1)).toBe(1);
  await scenario.cluster.deletePod('never-added', 'graceful');
  await scenario.cluster.deletePod('never-added');
  const released = await scenario.waitForPhase(uid, 'Released', 30_000);
  expect(released.lastError).toBeUndefined();
  const leaseId = leaseWorkflowId(uid, 'eth0');
  expect(await scheduledCount(scenario.temporal.client, leaseId, 'revokeOffer')).toBe(1);
  expect(await offersLeft(0)).toBe(0);
}, 60_000);

/** The agent's ADD for a pod with this network configuration, in the pod's own namespace. */
const addWith = (pod: { name: string; uid: string }, netns: TestNetns, conf: Record<string, unknown>) =>
  runShim({
    ...podCall(
      'ADD',
      { namespace: scenario.cluster.namespace, ...pod },
      {
        ...netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
        agentSocket: paths.cniSocket,
        deleteQueue: paths.deleteQueue,
        ...conf,
      },
    ),
    netns: netns.path,
  });

/** Every link the kernel has in the pod's and the agent's host-side namespaces. */
const kernelLinks = async (pod: TestNetns) =>
  [...(await pod.links()), ...(await host.links())].map(
    (l) => `${l.ifname}:${l.addr_info?.map((a) => a.local).join(',')}`,
  );

test('an ADD of another mode and pool than an offer nobody took withdraws the guess and is served on its own terms (seen red: 7 on every retry)', async () => {
  const pod = { name: 'other-terms', uid: await scenario.cluster.createPod('other-terms', node) };
  await offered(pod.uid);
  const podNetns = await makeNetns('other-terms');
  const guessed = (await scenario.leaseState(pod.uid)).addresses.map((a) => a.address);
  const outcome = await addWith(pod, podNetns, { mode: 'ptp', pool: V6ONLY });
  expect({ exitCode: outcome.exitCode, code: outcome.json?.code }).toEqual({ exitCode: 0, code: undefined });
  const told = (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address.split('/')[0]);
  // The ADD's terms: the v6-only pool's address, in the interface the agent made (ptp).
  expect(told).toHaveLength(1);
  expect(told[0]).toMatch(/^fd00:19::/);
  const eth0 = (await podNetns.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0).map((a) => a.split('/')[0])).toEqual(told);
  const lease = await scenario.waitForPhase(pod.uid, 'Active', 30_000);
  expect(lease.start).toMatchObject({ mode: 'ptp', pool: V6ONLY });
  // The guess is gone: its offer revoked, its addresses back on the node.
  expect(await offersLeft(0)).toBe(0);
  const held = Object.values((await scenario.table(node))?.allocations ?? {}).map((a) => a.address);
  expect(guessed.filter((a) => held.includes(a))).toEqual([]);
  expect(
    await scheduledCount(scenario.temporal.client, leaseWorkflowId(pod.uid, 'eth0'), 'revokeOffer'),
  ).toBe(1);

  // Now a runtime was told: an ADD of yet other terms is refused naming both sides, changing nothing.
  const links = await kernelLinks(podNetns);
  const refused = await addWith(pod, podNetns, { name: 'net-b', mode: 'ipam' });
  expect({ exitCode: refused.exitCode, code: refused.json?.code }).toEqual({ exitCode: 1, code: 7 });
  expect(refused.json?.msg).toBe(
    `terms-mismatch: pod ${scenario.cluster.namespace}/other-terms's eth0 lease was produced for network netlease-test (ptp, pool ${V6ONLY}); ` +
      `this ADD is for network net-b (ipam, pool ${scenario.temporal.taskQueue})`,
  );
  expect(await kernelLinks(podNetns)).toEqual(links);
}, 90_000);

test('a lease started by an ADD of one network refuses an ADD of another (the cold path); the kernel holds what each ADD answered', async () => {
  // No pod object: nothing pre-produces it; the first ADD starts the lease (ptp: the agent makes the interface).
  const pod = { name: 'cold', uid: uniqueName('cold-uid') };
  const podNetns = await makeNetns('cold');
  const first = await addWith(pod, podNetns, { mode: 'ptp' });
  expect(first.exitCode).toBe(0);
  const told = (first.json?.ips as Array<{ address: string }>).map((ip) => ip.address);
  const eth0 = (await podNetns.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0).sort()).toEqual([...told].sort());
  const links = await kernelLinks(podNetns);
  const state = await scenario.leaseState(pod.uid);
  const second = await addWith(pod, podNetns, { name: 'net-b', mode: 'ipam' });
  expect(second.exitCode).toBe(1);
  expect(second.json?.code).toBe(7);
  expect(second.json?.msg).toBe(
    `terms-mismatch: pod ${scenario.cluster.namespace}/cold's eth0 lease was produced for network netlease-test (ptp, pool ${scenario.temporal.taskQueue}); ` +
      `this ADD is for network net-b (ipam, pool ${scenario.temporal.taskQueue})`,
  );
  expect(await kernelLinks(podNetns)).toEqual(links);
  expect(await scenario.leaseState(pod.uid)).toEqual(state);
}, 60_000);

test('an ADD naming a pool the control plane does not serve is error 7 and starts no lease', async () => {
  const pod = { name: 'no-pool', uid: uniqueName('no-pool-uid') };
  const podNetns = await makeNetns('no-pool');
  const outcome = await addWith(pod, podNetns, { pool: 'nosuchpool' });
  expect(outcome.exitCode).toBe(1);
  expect(outcome.json?.code).toBe(7);
  expect(outcome.json?.msg).toBe('unknown-pool: pool: unknown pool "nosuchpool"');
  const leaseId = leaseWorkflowId(pod.uid, 'eth0');
  const started = await scenario.temporal.client.workflow
    .getHandle(leaseId)
    .describe()
    .then(
      () => true,
      (err: unknown) => (err instanceof WorkflowNotFoundError ? false : Promise.reject(err)),
    );
  expect(started).toBe(false);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 4);
});
