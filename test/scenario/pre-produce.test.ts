// Pre-produced leases: the node agent starts the lease of a pod as soon as it is bound to its
// node, so the ADD only joins a running workflow. The reservation stays bound to the pod UID; a pod
// deleted before its ADD is released by the usual verified path; an ADD racing the pre-produce
// makes one lease and one reservation; pods on the host network or other nodes get nothing.
import { WorkflowNotFoundError } from '@temporalio/client';
import { leaseWorkflowId } from '../../domain/ids';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { startPreProducing, type PreProducer } from '../../worker/pre-produce';
import { scheduledCount } from '../harness/history';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';

const node = uniqueName('node');
let scenario: Scenario;
let producer: PreProducer;
beforeAll(async () => {
  scenario = await Scenario.create('pre-produce');
  await scenario.cluster.createNode(node);
  producer = startPreProducing({
    client: scenario.temporal.client,
    kube: scenario.cluster.clients,
    reader: new ClusterReader(scenario.cluster.clients.core),
    nodeName: node,
    taskQueue: scenario.temporal.taskQueue,
    settings: { network: 'netlease-test', pool: scenario.temporal.taskQueue, mode: 'ipam', ifName: 'eth0' },
  });
});
afterAll(async () => {
  producer?.stop();
  await scenario?.close();
});

const add = (name: string, uid: string) =>
  runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: `/var/run/netns/${uid}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: scenario.cluster.namespace, K8S_POD_NAME: name, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
  });
const ips = (json: Record<string, unknown> | undefined) =>
  ((json?.ips ?? []) as Array<{ address: string }>).map((ip) => ip.address.split('/')[0]);
const historyOf = (uid: string) =>
  scenario.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0')).fetchHistory();
const runsOf = async (uid: string) => {
  const runs = [];
  const query = `WorkflowId = '${leaseWorkflowId(uid, 'eth0')}'`;
  for await (const run of scenario.temporal.client.workflow.list({ query })) runs.push(run.runId);
  return runs;
};
const ownersOn = async () =>
  Object.values((await scenario.table(node))?.allocations ?? {}).map((a) => a.owner);

test('a bound pod has its lease produced before any ADD; the ADD joins it with one update', async () => {
  const uid = await scenario.cluster.createPod('early', node);
  const produced = await scenario.waitForPhase(uid, 'Produced', 30_000);
  expect(produced.addresses).toHaveLength(2);
  expect(producer.started.has(uid)).toBe(true);

  const outcome = await add('early', uid);
  expect(outcome.exitCode).toBe(0);
  expect(ips(outcome.json)).toEqual(produced.addresses.map((a) => a.address));
  const leaseId = leaseWorkflowId(uid, 'eth0');
  expect(await scheduledCount(scenario.temporal.client, leaseId, 'produceAddresses')).toBe(1);
  const updates = ((await historyOf(uid)).events ?? []).filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes,
  );
  expect(updates).toHaveLength(1);
  expect(await runsOf(uid)).toHaveLength(1);
}, 60_000);

test('a pod deleted before its ADD: its pre-produced addresses are released', async () => {
  const uid = await scenario.cluster.createPod('never-added', node);
  const produced = await scenario.waitForPhase(uid, 'Produced', 30_000);
  await scenario.cluster.deletePod('never-added', 'graceful');
  await scenario.cluster.deletePod('never-added');
  const released = await scenario.waitForPhase(uid, 'Released', 30_000);
  expect(released.releaseReason).toMatch(/^watcher: .*never-added/);
  const owners = await ownersOn();
  expect(owners).not.toContain(leaseWorkflowId(uid, 'eth0'));
  expect(produced.addresses).toHaveLength(2);
}, 60_000);

test('an ADD racing the pre-produce for the same pod: one lease, one reservation', async () => {
  for (let i = 0; i < 5; i++) {
    const name = `racer-${i}`;
    const uid = await scenario.cluster.createPod(name, node);
    const outcome = await add(name, uid); // while the agent sees the pod bound
    expect(outcome.exitCode).toBe(0);
    await scenario.waitForPhase(uid, 'Active', 30_000);
    expect(await runsOf(uid)).toHaveLength(1);
    const mine = (await ownersOn()).filter((o) => o === leaseWorkflowId(uid, 'eth0'));
    expect(mine).toHaveLength(2); // one address per family
    expect(
      await scheduledCount(scenario.temporal.client, leaseWorkflowId(uid, 'eth0'), 'produceAddresses'),
    ).toBe(1);
  }
}, 120_000);

test('host-network pods and pods of other nodes get no lease', async () => {
  const onHost = await scenario.cluster.createPod('on-host', node, { hostNetwork: true });
  const elsewhere = await scenario.cluster.createPod('elsewhere', uniqueName('other-node'));
  // Events are handled in order: once a later pod is produced, the two above were decided.
  const marker = await scenario.cluster.createPod('marker', node);
  await scenario.waitForPhase(marker, 'Produced', 30_000);
  for (const uid of [onHost, elsewhere]) {
    const found = await scenario.temporal.client.workflow
      .getHandle(leaseWorkflowId(uid, 'eth0'))
      .describe()
      .then(
        () => 'found',
        (err: unknown) => (err instanceof WorkflowNotFoundError ? 'absent' : Promise.reject(err)),
      );
    expect(found).toBe('absent');
  }
}, 60_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 8);
});
