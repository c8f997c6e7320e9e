// The node agent as its own process (node dist/worker/agent/node-agent.js) with `preProduce`: it
// watches the pods bound to its node, holds their leases' grants as offers in its offerDir,
// answers a first ADD from the offer through the real shim, and revokes the offer of a pod
// deleted before its ADD with the same activities its worker runs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leaseWorkflowId } from '../../domain/ids';
import { acceptedUpdates, scheduledCount } from '../harness/history';
import { kubeconfigPath } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { offersOnDisk } from '../harness/offers';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { podCall, runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { waitFor } from '../../tools/processes';

const node = uniqueName('node');
const dir = mkdtempSync(join(tmpdir(), 'netlease-agent-offers-'));
const offerDir = join(dir, 'offers');
const paths: AgentCniPaths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
let scenario: Scenario;
let agent: NodeAgentProcess;

beforeAll(async () => {
  scenario = await Scenario.create('agent-offers');
  await scenario.cluster.createNode(node);
  const host = await makeNetns('agent-offers-host');
  agent = startNodeAgentProcess(node, host.name, {}, { taskQueue: scenario.temporal.taskQueue }, paths, {
    offerDir,
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: { network: 'netlease-test', pool: scenario.temporal.taskQueue, mode: 'ipam' },
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
  expect(await updatesOf(uid)).toEqual(['offer', 'consume']);
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

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 2);
});
