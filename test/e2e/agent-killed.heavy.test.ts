// End to end: the node agent SIGKILLed while the scheduler places 10 pods on its node. containerd's
// ADDs fail while it is gone (the shim finds no socket), the kubelet retries the sandboxes, and a
// new agent with the same config serves them. The retries must converge: one open lease per pod,
// its addresses on the pod's eth0 and in its podIPs, and the node's table holding exactly those.
import { expectReplayed } from '../harness/replay';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { ipJson } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import { leaseExecutions } from '../../temporal/visibility';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { nodeStateQuery } from '../../workflows/node-messages';
import { sandboxNetns } from '../harness/real-node';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { sleepersDeployment, useRealCluster } from '../harness/real-cluster';

const REPLICAS = 10;
const nodeName = uniqueName('e2e-kill');
const namespace = 'default';
const app = uniqueName('killed');
const real = useRealCluster({ prefix: 'e2e-kill', nodeNames: [nodeName], preProduce: true });

const nodeTable = async () =>
  (await real.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery)).tables[
    real.temporal.taskQueue
  ];

const podsOfApp = async (): Promise<V1Pod[]> =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;

const isRunning = (p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp;
const allRunning = (pods: V1Pod[]) => pods.length === REPLICAS && pods.every(isRunning);
const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** Sandbox creations the kubelet reports as failed for this app's pods (the ADDs the dead agent missed). */
const failedSandboxes = async () =>
  (
    await real.core.listNamespacedEvent({ namespace, fieldSelector: 'reason=FailedCreatePodSandBox' })
  ).items.filter((e) => e.involvedObject.name?.startsWith(app));

async function createDeployment(): Promise<void> {
  await real.apps.createNamespacedDeployment({
    namespace,
    body: sleepersDeployment(app, REPLICAS),
  });
}

test(`the agent SIGKILLed while ${REPLICAS} pods are placed: one lease per pod, no leaked address`, async () => {
  if (!real.node.agent) throw new Error('no agent');
  await createDeployment();
  // As soon as the scheduler binds the first pod, the agent dies without a chance to clean up.
  await waitForValue(podsOfApp, (pods) => pods.some((p) => p.spec?.nodeName), 120_000, 100, 'a pod bound');
  expect(await real.node.killAgent('SIGKILL')).toBe('SIGKILL');
  // While it is gone the kubelet's sandbox creation fails and pods stay short of Running.
  await waitForValue(failedSandboxes, (events) => events.length > 0, 180_000, 500, 'a failed sandbox');
  expect((await podsOfApp()).filter(isRunning).length).toBeLessThan(REPLICAS);

  await real.node.startAgent();
  const pods = await waitForValue(podsOfApp, allRunning, 600_000, 1000, `${REPLICAS} pods of ${app} Running`);
  expect(pods.map((p) => p.spec?.nodeName)).toEqual(pods.map(() => nodeName));
  const uids = pods.map(uidOf);

  // Exactly one open lease per pod, as visibility lists them (it lags a moment behind).
  const open = await waitForValue(
    () => leaseExecutions(real.temporal.client, real.temporal.taskQueue, { open: true }),
    (rows) => uids.every((uid) => rows.some((r) => r.podUid === uid)),
    30_000,
    500,
    'the open leases listed',
  );
  expect(sorted(uids.map((uid) => `${uid}:${open.filter((r) => r.podUid === uid).length}`))).toEqual(
    sorted(uids.map((uid) => `${uid}:1`)),
  );

  // Each pod's podIPs are its lease's addresses, unique across pods, on eth0 in its sandbox.
  const leases = new Map<string, LeaseState>();
  for (const uid of uids) {
    const handle = real.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'));
    leases.set(
      uid,
      await waitForValue(
        () => handle.query(leaseStateQuery),
        (s) => s.phase === 'Running',
        60_000,
      ),
    );
  }
  for (const pod of pods) {
    const addresses = addressesOf(leases.get(uidOf(pod)));
    expect(addresses).toHaveLength(2); // the test pool is dual-stack
    expect(sorted((pod.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));
    const { netns } = await sandboxNetns(real.node.real.containerd.ctr, uidOf(pod));
    const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
    const onLink = (eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local);
    expect(sorted(onLink)).toEqual(sorted(addresses));
  }
  const everyAddress = [...leases.values()].flatMap(addressesOf);
  expect(new Set(everyAddress).size).toBe(REPLICAS * 2);

  // The node's table holds those addresses for their pods' leases, and nothing else: no leak.
  const holding = Object.entries((await nodeTable())?.allocations ?? {}).map(
    ([address, a]) => `${address}=${a.owner}`,
  );
  const expected = uids.flatMap((uid) =>
    addressesOf(leases.get(uid)).map((address) => `${address}=${leaseWorkflowId(uid, 'eth0')}`),
  );
  expect(sorted(holding)).toEqual(sorted(expected));

  // Deleting the Deployment empties the table.
  await real.apps.deleteNamespacedDeployment({
    name: app,
    namespace,
    body: { propagationPolicy: 'Foreground' },
  });
  await waitForValue(podsOfApp, (left) => left.length === 0, 300_000, 1000, `pods of ${app} gone`);
  const table = await waitForValue(
    nodeTable,
    (t) => Object.keys(t?.allocations ?? {}).length === 0,
    120_000,
    500,
    `no allocation left on ${nodeName}`,
  );
  expect(table?.allocations).toEqual({});
}, 1_200_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, REPLICAS + 1); // the leases and the node's workflow at least
});
