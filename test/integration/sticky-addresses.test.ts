// Sticky StatefulSet addresses on the dev stack (issue 29 item 1, domain/sticky-addresses): two
// nodes, each with its own node agent process (ptp, real shim, real network namespaces,
// pre-producing). A StatefulSet's pod opted in (its template's annotation) gets addresses kept
// for `<namespace>/<statefulset>/<ordinal>`; deleted and created again (a new UID) on the other
// node it gets them again, read back from the kernel. The fence: the old pod's node cut off (its
// agent stopped) and the old pod force-deleted, the new pod's ADD is answered 11
// `sticky-address-fenced`, with an Event, until the old Node is deleted and its incarnation
// compensated; then it gets the addresses. A pool that opts in all its StatefulSets keeps an
// ordinal's addresses for `sticky.keepSeconds` once no pod holds them, then lets them go. A pool
// workflow reset gets back, with its rebuilt blocks, the reservations its pods hold (their leases').
// A deleted StatefulSet's reservations end at the reconciler's next sweep once no pod holds them.
import { globalAddresses } from '../../kernel/links';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import { rebuildPoolUpdate, reservationsQuery } from '../../workflows/pool-messages';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import {
  callThrough,
  nodesWithAgents,
  stopPreProducingAgents,
  type PreProducingAgent,
} from '../harness/pre-producing-agents';
import { expectReplayed } from '../harness/replay';
import { failedTasks, resetToStart } from '../harness/operator-actions';
import { Scenario } from '../harness/scenario';
import { deleteStatefulSet } from '../harness/statefulsets';
import type { ShimOutcome } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const NODES = [uniqueName('sticky-a'), uniqueName('sticky-b')] as const;
const KEPT_POOL = uniqueName('kept');
const OPTED_IN = { 'netlease.io/sticky-addresses': 'true' };

let scenario: Scenario;
let agents = new Map<string, PreProducingAgent>();

beforeAll(async () => {
  scenario = await Scenario.create('sticky-addresses', {
    reuseCooldownSeconds: 1,
    morePools: [
      { name: KEPT_POOL, cidrs: ['10.203.0.0/24'], sticky: { statefulSets: true, keepSeconds: 8 } },
    ],
  });
  agents = await nodesWithAgents(scenario, NODES, 'sticky');
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
  pool: string;
}

async function statefulSetPod(
  name: string,
  node: string,
  options: { annotations?: Record<string, string>; pool?: string } = {},
): Promise<Pod> {
  const statefulSet = name.replace(/-\d+$/, '');
  const annotations = options.annotations ?? OPTED_IN;
  const uid = await scenario.cluster.createPod(name, node, { annotations, statefulSet });
  return { name, uid, node, netns: await makeNetns(name), pool: options.pool ?? scenario.temporal.taskQueue };
}

const call = (command: 'ADD' | 'DEL', pod: Pod): Promise<ShimOutcome> =>
  callThrough(agents.get(pod.node) as PreProducingAgent, command, {
    taskQueue: scenario.temporal.taskQueue,
    nodeName: pod.node,
    pod: { namespace: scenario.cluster.namespace, name: pod.name, uid: pod.uid },
    netnsPath: pod.netns.path,
    pool: pod.pool,
  });

/** The ADD, retried as the kubelet does while it is answered 11; what it told, read back from the kernel. */
async function added(pod: Pod, timeoutMs = 30_000): Promise<string[]> {
  const outcome = await waitForValue(
    () => call('ADD', pod),
    (o) => o.exitCode === 0 || o.json?.code !== 11,
    timeoutMs,
    300,
    `the ADD of ${pod.name}`,
  );
  expect({ exitCode: outcome.exitCode, msg: outcome.json?.msg }).toEqual({ exitCode: 0, msg: undefined });
  const told = (outcome.json?.ips as Array<{ address: string }>).map((ip) => ip.address);
  const eth0 = (await pod.netns.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0)).toEqual(told);
  return told;
}

const reservations = (pool = scenario.temporal.taskQueue) =>
  scenario.temporal.client.workflow.getHandle(poolWorkflowId(pool)).query(reservationsQuery);

const keyOf = (statefulSet: string, ordinal: number) =>
  `${scenario.cluster.namespace}/${statefulSet}/${ordinal}`;
const bare = (told: string[]) => told.map((a) => a.split('/')[0]);

/** The pod goes as a StatefulSet scale-down or a rescheduling does: its DEL, then the Pod object. */
async function gone(pod: Pod): Promise<void> {
  expect((await call('DEL', pod)).exitCode).toBe(0);
  await scenario.deletedAndReleased(pod);
}

/** pg-0 and pg-1 as the first test leaves them: running on the second node with their ordinals' addresses. */
let living: { pod: Pod; told: string[] } | undefined;
let living1: { pod: Pod; told: string[] } | undefined;

test('an ordinal keeps its addresses: pg-0 deleted and created again on the other node gets them again', async () => {
  const first = await statefulSetPod('pg-0', NODES[0]);
  const told = await added(first);
  expect(told).toHaveLength(2); // the dual-stack pool: one kept per family
  expect((await reservations())[keyOf('pg', 0)]).toEqual({ addresses: bare(told) });
  expect((await scenario.leaseState(first.uid)).start).toMatchObject({
    stickyKey: keyOf('pg', 0),
    staticAddresses: bare(told).join(','),
  });
  await gone(first);
  const again = await statefulSetPod('pg-0', NODES[1]);
  expect(again.uid).not.toBe(first.uid);
  expect(await added(again)).toEqual(told);
  living = { pod: again, told };
  // Another ordinal gets others, beside them (the block holding reservations is no node's).
  const second = await statefulSetPod('pg-1', NODES[1]);
  const other = await added(second);
  expect(bare(other)).not.toEqual(bare(told));
  expect(other[0]?.split('.').slice(0, 3)).toEqual(told[0]?.split('.').slice(0, 3));
  living1 = { pod: second, told: other };
}, 120_000);

test('a pool workflow reset: once rebuilt, its reservations are back, held or idle, and their ADDs answer as before', async () => {
  if (!living || !living1) throw new Error('the first test left no pg-0 and pg-1');
  const pool = scenario.temporal.client.workflow.getHandle(poolWorkflowId(scenario.temporal.taskQueue));
  // pg-1 scaled away first: its reservation is idle (no pod holds it) when the pool is reset.
  await gone(living1.pod);
  await waitForValue(
    () => reservations(),
    (r) => r[keyOf('pg', 1)]?.idleSince !== undefined,
    30_000,
  );
  await resetToStart(scenario.temporal.client, pool.workflowId, 'afterRebuild');
  // The control worker has a reset pool rebuild its blocks (it finds it unverified at a hand-out).
  const { runId } = await pool.describe();
  await pool.executeUpdate(rebuildPoolUpdate, { args: [{ forRun: runId }] });
  expect((await reservations())[keyOf('pg', 0)]).toEqual({ addresses: bare(living.told) });
  // The runtime repeats pg-0's ADD: the reservation asked for again is the one its lease holds.
  expect(await added(living.pod)).toEqual(living.told);
  // The idle one came back from the run before the reset: pg-1, scaled up again, gets its addresses.
  expect((await reservations())[keyOf('pg', 1)]?.addresses).toEqual(bare(living1.told));
  expect(await added(await statefulSetPod('pg-1', NODES[0]))).toEqual(living1.told);
}, 90_000);

test('a pool that keeps its StatefulSets’ addresses lets an idle ordinal’s go after keepSeconds', async () => {
  const pod = await statefulSetPod('cache-0', NODES[1], { annotations: {}, pool: KEPT_POOL });
  const [told] = await added(pod);
  expect(told?.startsWith('10.203.0.')).toBe(true);
  expect(Object.keys(await reservations(KEPT_POOL))).toEqual([keyOf('cache', 0)]);
  await gone(pod);
  // The UI's Cancel on the node and the pool while their timers run (the pinned block's cooldown,
  // the reservation's keep time): ignored, and no workflow task fails (the soak found the pool's did).
  const node = scenario.temporal.client.workflow.getHandle(nodeWorkflowId(NODES[1]));
  const kept = scenario.temporal.client.workflow.getHandle(poolWorkflowId(KEPT_POOL));
  await node.cancel();
  // Cooled (1 s), its pinned block back in the pool: idle from then.
  await waitForValue(
    () => reservations(KEPT_POOL),
    (r) => r[keyOf('cache', 0)]?.idleSince !== undefined,
    30_000,
  );
  await kept.cancel();
  // Idle for 8 s (longer than a pod's deletion takes here, so the test sees it idle): it ends.
  await waitForValue(
    () => reservations(KEPT_POOL),
    (r) => Object.keys(r).length === 0,
    30_000,
  );
  for (const handle of [node, kept]) {
    expect(await failedTasks(scenario.temporal.client, handle.workflowId)).toEqual([]);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  }
}, 90_000);

test('a deleted StatefulSet’s reservations end at the reconciler’s sweep: the idle one at once, the held one once its pod is gone', async () => {
  const web0 = await statefulSetPod('web-0', NODES[1]);
  const web1 = await statefulSetPod('web-1', NODES[1]);
  const kv0 = await statefulSetPod('kv-0', NODES[1]);
  for (const pod of [web0, web1, kv0]) await added(pod);
  await gone(web0);
  await gone(kv0);
  await waitForValue(
    () => reservations(),
    (r) => r[keyOf('web', 0)]?.idleSince !== undefined && r[keyOf('kv', 0)]?.idleSince !== undefined,
    30_000,
  );
  // Idle reservations of StatefulSets that exist are kept (the pool keeps them an hour by default).
  const kept = Object.keys(await reservations()).filter((key) => !key.includes('/web/'));
  expect(kept).toContain(keyOf('kv', 0));
  await deleteStatefulSet(scenario.cluster.clients, scenario.cluster.namespace, 'web');
  expect((await scenario.reconcile()).reservationsEnded).toBe(1);
  const after = await reservations();
  expect(Object.keys(after).filter((key) => key.includes('/web/'))).toEqual([keyOf('web', 1)]);
  expect(Object.keys(after).filter((key) => !key.includes('/web/'))).toEqual(kept);
  // web-1 is collected (no garbage collector runs here: the test deletes it); once idle, it ends.
  await gone(web1);
  await waitForValue(
    async () => (await scenario.reconcile(), await reservations()),
    (r) => r[keyOf('web', 1)] === undefined,
    30_000,
  );
  expect(Object.keys(await reservations()).filter((key) => !key.includes('/web/'))).toEqual(kept);
}, 120_000);

test('the fence: the old pod force-deleted on a cut-off node, the new one waits until that Node is gone', async () => {
  const old = await statefulSetPod('pg-2', NODES[0]);
  const told = await added(old);
  // The node is cut off: its agent stops (nothing can remove the sandbox now), the pod is force-deleted.
  await agents.get(NODES[0])?.process.stop();
  await scenario.cluster.deletePod(old.name, 'now');
  await scenario.reconcile();
  const replacement = await statefulSetPod('pg-2', NODES[1]);
  const refused = await call('ADD', replacement);
  expect({ exitCode: refused.exitCode, code: refused.json?.code }).toEqual({ exitCode: 1, code: 11 });
  expect(refused.json?.msg).toMatch(
    new RegExp(
      `^sticky-address-fenced: the address kept for StatefulSet pod ${keyOf('pg', 2)} waits for its earlier holder to let go`,
    ),
  );
  expect((await replacement.netns.links()).map((l) => l.ifname)).toEqual(['lo']);
  const events = await waitForValue(
    async () =>
      (
        await scenario.cluster.clients.core.listNamespacedEvent({
          namespace: scenario.cluster.namespace,
          fieldSelector: `involvedObject.uid=${replacement.uid}`,
        })
      ).items,
    (found) => found.length > 0,
    20_000,
  );
  expect(events[0]).toMatchObject({ type: 'Warning', reason: 'StickyAddressFenced' });
  // Still fenced a while later: a pod gone from the API is not a sandbox gone.
  expect((await call('ADD', replacement)).json?.code).toBe(11);

  // The Node is deleted: its incarnation is compensated (the old lease released, its blocks back).
  await scenario.cluster.deleteNode(NODES[0], 'now');
  expect(await added(replacement, 60_000)).toEqual(told);
}, 150_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 8);
});
