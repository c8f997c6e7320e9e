// Every path that lists by visibility, while visibility lags on purpose (a psql session holds the
// visibility table locked: test/harness/visibility-lag), then after it catches up: the reconciler,
// the pod watcher and netleasectl never act on what visibility has not caught up with, and what
// visibility missed is handled once it lists it. Production Temporal only (npm run test:production).
import { join } from 'node:path';
import { z } from 'zod';
import type { PoolSpec } from '../../domain/config';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { nodeAddressEvents } from '../../temporal/histories';
import { signalRelease } from '../../temporal/signals';
import { knownLeases, knownNodes } from '../../temporal/visibility';
import { runToEnd, type Finished } from '../../tools/processes';
import { addressesUsed, leasesByPhase } from '../../observability/control-metrics';
import { createLog } from '../../observability/log';
import { startMetricsSampler } from '../../worker/control/metrics-sampler';
import { PodEvents } from '../../worker/control/watchers/pod-events';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { podCall, runShim, type ShimCall } from '../harness/shim';
import { kubeconfigPath } from '../harness/kube';
import { untilListed } from '../harness/listed';
import { netconf } from '../harness/netconf';
import { nodeOperations } from '../harness/node-operations';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { holdVisibility, type VisibilityLag } from '../harness/visibility-lag';
import { waitForValue } from '../harness/wait';

let scenario: Scenario;
// Watchers off: each test hands pod events to the watcher's code itself, at a known moment. A long
// reuse cooldown: a lease made again for a pod gets new addresses, not the ones it had.
beforeAll(
  async () => (scenario = await Scenario.create('vlag', { watch: false, reuseCooldownSeconds: 600 })),
);
afterAll(async () => scenario?.close());

/** Measured figures, printed at the end: how long visibility was held back, how long paths took after. */
const figures: Record<string, number> = {};
afterAll(() => process.stdout.write(`\nvisibility lag figures (ms): ${JSON.stringify(figures)}\n`));

/** Runs `work` with visibility held back; releases it however `work` ends. */
async function whileLagging<T>(name: string, work: (lag: VisibilityLag) => Promise<T>): Promise<T> {
  const lag = await holdVisibility();
  let released = false;
  try {
    const result = await work(lag);
    figures[`${name}: held`] = await lag.release();
    released = true;
    return result;
  } finally {
    if (!released) await lag.release().catch(() => undefined);
  }
}

/** Waits until `done` holds after visibility was released; records how long that took. */
async function converged<T>(name: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const started = Date.now();
  const value = await waitForValue(read, done, 120_000, 500, name);
  figures[`${name}: after release`] = Date.now() - started;
  return value;
}

const CLI = join(__dirname, '..', '..', 'cli', 'netleasectl.js');

/** The real CLI against the test's servers, JSON output; stdin is not a terminal. */
const ctl = (...args: string[]): Promise<Finished> =>
  runToEnd('node', [
    CLI,
    ...args,
    ...['--address', temporalAddress(), '--task-queue', scenario.temporal.taskQueue],
    ...['--kubeconfig', kubeconfigPath(), '--output', 'json'],
  ]);

const CheckSchema = z.object({
  problems: z.array(z.object({ problem: z.string() })),
  checked: z.array(z.string()),
});

const listedUids = async () =>
  (await knownLeases(scenario.temporal.client, scenario.temporal.taskQueue)).map((l) => l.podUid);

/** Waits until visibility lists these pods' leases as Active (before it is held back). */
const listedActive = (...uids: string[]) =>
  untilListed(scenario.temporal.client, scenario.temporal.taskQueue, (leases) =>
    uids.every((uid) => leases.some((l) => l.podUid === uid && l.phase === 'Active')),
  );

/** A pod on a new node with its lease made by an ADD (Active). */
async function podWithLease(name: string): Promise<{ node: string; uid: string }> {
  const node = uniqueName('vlag-node');
  await scenario.cluster.createNode(node);
  const uid = await scenario.cluster.createPod(name, node);
  await scenario.add(name, uid, node);
  return { node, uid };
}

test('holding the visibility table holds back the listing of a started lease until it is released', async () => {
  const uid = await whileLagging('started lease', async (lag) => {
    const { uid } = await podWithLease('held-1');
    expect((await scenario.leaseState(uid)).phase).toBe('Active');
    // Its visibility writes wait on the lock (not luck: the lock), past the server's own timeout
    // for one write: it gives each up after about 3 s and tries again, never drops it.
    let longest = 0;
    const sample = async () => {
      const [blocked, oldest] = [await lag.blockedWrites(), await lag.oldestWaitMs()];
      longest = Math.max(longest, oldest);
      return { held: Date.now() - lag.since, blocked };
    };
    await waitForValue(
      sample,
      (s) => s.held >= 15_000 && s.blocked > 0,
      60_000,
      500,
      'writes blocked for 15 s',
    );
    figures['longest wait of one blocked write'] = longest;
    expect(await listedUids()).not.toContain(uid);
    return uid;
  });
  await converged('started lease listed', listedUids, (uids) => uids.includes(uid));
}, 240_000);

test('the reconciler leaves an unlisted lease alone and releases it once listed if its pod is gone', async () => {
  const { uid } = await whileLagging('reconciler, unlisted lease', async () => {
    const made = await podWithLease('gone-1');
    await scenario.cluster.deletePod('gone-1');
    const summary = await scenario.reconcile();
    expect(summary.released).toBe(0);
    expect((await scenario.leaseState(made.uid)).phase).toBe('Active');
    return made;
  });
  await converged(
    'reconciler releases once listed',
    () => scenario.reconcile(),
    (s) => s.released >= 1,
  );
  const state = await scenario.waitForPhase(uid, 'Released');
  expect(state.releaseReason).toMatch(/reconciler: pod .*gone-1 .* no longer exists/);
}, 240_000);

test('a pod deletion the watcher handles before its lease is listed releases it (read by id)', async () => {
  const { core } = scenario.cluster.clients;
  const events = new PodEvents(
    new ClusterReader(core),
    scenario.temporal.client,
    scenario.temporal.taskQueue,
  );
  const { uid } = await whileLagging('watcher, unlisted lease', async () => {
    const made = await podWithLease('gone-2');
    const pod = await core.readNamespacedPod({ name: 'gone-2', namespace: scenario.cluster.namespace });
    await scenario.cluster.deletePod('gone-2');
    // Visibility has not listed the lease: the watcher finds it by its id all the same.
    expect((await scenario.temporal.client.workflow.count(`PodUID = '${made.uid}'`)).count).toBe(0);
    expect(await events.handle('DELETED', pod)).toBe('released');
    return made;
  });
  const state = await scenario.waitForPhase(uid, 'Released');
  expect(state.releaseReason).toMatch(/watcher: pod .*gone-2 .* no longer exists/);
}, 240_000);

test('the reconciler neither counts nor repeats work on a lease whose listed phase is stale', async () => {
  const { cluster } = scenario;
  const a = await podWithLease('stale-a');
  const b = await podWithLease('stale-b');
  await listedActive(a.uid, b.uid);
  const before = await scenario.leaseState(a.uid);
  await whileLagging('reconciler, stale phases', async () => {
    await cluster.setPodPhase('stale-a', 'Running');
    expect((await scenario.reconcile()).confirmedRunning).toBeGreaterThanOrEqual(1);
    await scenario.waitForPhase(a.uid, 'Running');
    // b is released by hand and its pod deleted: visibility still lists it open, and Active.
    await signalRelease(scenario.temporal.client, leaseWorkflowId(b.uid, 'eth0'), 'by hand');
    await scenario.waitForPhase(b.uid, 'Released');
    await cluster.deletePod('stale-b');
    const listed = await knownLeases(scenario.temporal.client, scenario.temporal.taskQueue);
    expect(listed.filter((l) => [a.uid, b.uid].includes(l.podUid)).map((l) => l.phase)).toEqual([
      'Active',
      'Active',
    ]);
    const summary = await scenario.reconcile();
    expect(summary.released).toBe(0);
  });
  const a2 = await scenario.leaseState(a.uid);
  expect([a2.phase, a2.addresses]).toEqual(['Running', before.addresses]);
  expect((await scenario.leaseState(b.uid)).releaseReason).toBe('by hand');
  await converged(
    'stale phases caught up',
    () => knownLeases(scenario.temporal.client, scenario.temporal.taskQueue),
    (leases) =>
      leases.some((l) => l.podUid === a.uid && l.phase === 'Running') &&
      !leases.some((l) => l.podUid === b.uid),
  );
  const after = await scenario.reconcile();
  expect([after.released, after.confirmedRunning]).toEqual([0, 0]);
}, 240_000);

test('a node replaced while visibility still lists its old incarnation keeps its new leases', async () => {
  const { cluster } = scenario;
  const { client, taskQueue } = scenario.temporal;
  const { node, uid: oldPod } = await podWithLease('inc-old');
  const oldUid = (await cluster.clients.core.readNode({ name: node })).metadata?.uid ?? '';
  await scenario.reconcile(); // observes the first incarnation
  const uidListed = async () => (await knownNodes(client, taskQueue)).find((n) => n.name === node)?.uid;
  await waitForValue(uidListed, (uid) => uid === oldUid, 30_000, 200, 'the first incarnation listed');
  const { newUid, newPod } = await whileLagging('reconciler, replaced node', async () => {
    // The old pod goes with its Node (the pod GC): release follows the pod, so its lease ends; a
    // pod that lived on would be adopted by the new incarnation (test/scenario/000).
    await cluster.deleteNode(node);
    await cluster.deletePod('inc-old');
    const newUid = await cluster.createNode(node);
    await scenario.reconcile(); // the old incarnation is deleted, the new one observed
    const newPod = await cluster.createPod('inc-new', node);
    await scenario.add('inc-new', newPod, node);
    expect(await uidListed()).toBe(oldUid); // stale: the node workflow has moved on
    await scenario.reconcile();
    await scenario.reconcile();
    return { newUid, newPod };
  });
  const released = await scenario.waitForPhase(oldPod, 'Released');
  expect(released.releaseReason).toContain('no longer exists');
  expect((await scenario.leaseState(newPod)).phase).toBe('Active');
  const state = await scenario.nodeState(node);
  expect(state.incarnation).toBe(newUid);
  expect(Object.keys(state.retired)).not.toContain(newUid);
  await converged('new incarnation listed', uidListed, (uid) => uid === newUid);
  const after = await scenario.reconcile();
  expect([after.nodesDeleted, after.nodesReplaced]).toEqual([0, 0]);
  expect((await scenario.leaseState(newPod)).phase).toBe('Active');
}, 240_000);

test('netleasectl lease finds a lease visibility does not list yet', async () => {
  const { uid } = await whileLagging('netleasectl lease, unlisted lease', async () => {
    const made = await podWithLease('ctl-new');
    expect(await listedUids()).not.toContain(made.uid);
    const shown = await ctl('lease', leaseWorkflowId(made.uid, 'eth0'));
    expect(shown.stderr).toBe('');
    expect(JSON.parse(shown.stdout)).toMatchObject({ open: true, state: { phase: 'Active' } });
    return made;
  });
  await converged('unlisted lease listed', listedUids, (uids) => uids.includes(uid));
}, 240_000);

test('netleasectl ip names the holder of an address on a node visibility does not list yet', async () => {
  await whileLagging('netleasectl ip, unlisted node', async () => {
    const { uid, node } = await podWithLease('ip-new');
    const address = (await scenario.leaseState(uid)).addresses[0]?.address ?? '';
    const shown = await ctl('ip', address);
    expect(shown.stderr).toBe('');
    expect(JSON.parse(shown.stdout)).toMatchObject({
      current: [{ node, owner: leaseWorkflowId(uid, 'eth0'), pod: `${scenario.cluster.namespace}/ip-new` }],
      history: [{ owner: leaseWorkflowId(uid, 'eth0'), pod: `${scenario.cluster.namespace}/ip-new` }],
    });
  });
}, 240_000);

test('netleasectl check calls leases and nodes visibility does not list yet no problem', async () => {
  const { client, taskQueue } = scenario.temporal;
  const known = await podWithLease('ctl-known');
  await scenario.listed(known.uid);
  const nodeListed = async () => (await knownNodes(client, taskQueue)).some((n) => n.name === known.node);
  await waitForValue(nodeListed, (listed) => listed, 30_000, 200, `node ${known.node} listed`);
  const unlisted = await whileLagging('netleasectl check, unlisted', async () => {
    // One lease on a node visibility lists, one on a node it does not list yet.
    const onKnown = await scenario.cluster.createPod('ctl-known-2', known.node);
    await scenario.add('ctl-known-2', onKnown, known.node);
    const fresh = await podWithLease('ctl-fresh');
    expect(await listedUids()).not.toContain(onKnown);
    expect(await listedUids()).not.toContain(fresh.uid);
    const check = CheckSchema.parse(JSON.parse((await ctl('check')).stdout));
    expect(check.checked.join('\n')).toMatch(/addresses: [1-9]\d* allocations/);
    const names = [onKnown, fresh.uid, fresh.node];
    expect(check.problems.filter((p) => names.some((name) => p.problem.includes(name)))).toEqual([]);
    return [onKnown, fresh.uid];
  });
  await converged('checked leases listed', listedUids, (uids) => unlisted.every((uid) => uids.includes(uid)));
}, 240_000);

test('netleasectl release acts on the run it confirmed, not on one visibility shows stale', async () => {
  const { uid, node } = await podWithLease('ctl-rerun');
  await listedActive(uid);
  const id = leaseWorkflowId(uid, 'eth0');
  const first = await scenario.leaseState(uid);
  const old = first.addresses.find((a) => !a.address.includes(':'))?.address ?? '';
  await whileLagging('netleasectl, stale run', async () => {
    await signalRelease(scenario.temporal.client, id, 'by hand');
    await scenario.waitForPhase(uid, 'Released');
    await scenario.add('ctl-rerun', uid, node); // a new run of the same lease, new addresses
    expect((await scenario.leaseState(uid)).addresses.map((a) => a.address)).not.toContain(old);
    const stale = await knownLeases(scenario.temporal.client, scenario.temporal.taskQueue);
    expect(stale.find((l) => l.podUid === uid)?.phase).toBe('Active'); // the released run, stale
    const release = await ctl('release', old, '--reason', 'stale test', '--yes');
    expect(release.stderr).toContain('already Released: nothing to release');
    expect(release.exitCode).toBe(1);
    const shown = JSON.parse((await ctl('lease', id)).stdout) as { state: { phase: string } };
    expect(shown.state.phase).toBe('Active');
  });
  const now = await scenario.leaseState(uid);
  expect(now.phase).toBe('Active');
  expect(now.releaseReason ?? '').not.toContain('stale test');
}, 240_000);

test('CNI GC collects a dropped sandbox of a lease visibility does not list yet once it does', async () => {
  const { cluster } = scenario;
  const node = uniqueName('vlag-gc');
  await cluster.createNode(node);
  const conf = netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node });
  const pod = async (name: string) => ({
    namespace: cluster.namespace,
    name,
    uid: await cluster.createPod(name, node),
  });
  const ok = async (call: ShimCall) => expect((await runShim(call)).exitCode).toBe(0);
  const kept = await pod('gc-kept');
  await ok(podCall('ADD', kept, conf));
  await scenario.listed(kept.uid);
  // The runtime's GC: only the kept sandbox is valid.
  const gc = () =>
    ok({
      command: 'GC',
      stdin: { ...conf, 'cni.dev/valid-attachments': [{ containerID: `ctr-${kept.uid}`, ifname: 'eth0' }] },
    });
  const dropped = await whileLagging('CNI GC, unlisted lease', async () => {
    const dropped = await pod('gc-dropped');
    await ok(podCall('ADD', dropped, conf));
    expect(await listedUids()).not.toContain(dropped.uid);
    await gc();
    // Not collected yet (GC finds leases through visibility), and nothing else is touched.
    expect((await scenario.leaseState(dropped.uid)).attachments).toHaveLength(1);
    expect((await scenario.leaseState(kept.uid)).attachments).toHaveLength(1);
    return dropped;
  });
  await converged(
    'GC collects once listed',
    async () => (await gc(), scenario.leaseState(dropped.uid)),
    (s) => s.attachments.length === 0,
  );
  expect((await scenario.leaseState(dropped.uid)).phase).toBe('Produced');
  expect((await scenario.leaseState(kept.uid)).attachments).toHaveLength(1);
}, 240_000);

test('the metrics sampler counts what visibility lists and catches up once it lists more', async () => {
  const { client, taskQueue } = scenario.temporal;
  const sampler = startMetricsSampler(client, taskQueue, 3600, createLog('test', 'warn'));
  const read = async () => {
    await sampler.sample();
    const active = (await leasesByPhase.get()).values.find((v) => v.labels.phase === 'Active')?.value ?? 0;
    const nodes = new Set((await addressesUsed.get()).values.map((v) => String(v.labels.node)));
    return { active, nodes };
  };
  try {
    const before = await read();
    const made = await whileLagging('metrics sampler, unlisted lease', async () => {
      const made = await podWithLease('metrics-1');
      const stale = await read();
      expect(stale.active).toBe(before.active); // a count, not a decision: it may lag
      expect(stale.nodes.has(made.node)).toBe(false);
      return made;
    });
    await converged(
      'metrics caught up',
      read,
      (s) => s.active === before.active + 1 && s.nodes.has(made.node),
    );
  } finally {
    await sampler.stop();
  }
}, 240_000);

test("a node's address history has the runs visibility does not list yet", async () => {
  const { client, taskQueue } = scenario.temporal;
  const node = uniqueName('vlag-history');
  const pool = scenario.config.pools[0] as PoolSpec;
  const ops = nodeOperations({ client, taskQueue, nodeName: node, historyLimit: 40 });
  const runOf = async () => (await client.workflow.getHandle(nodeWorkflowId(node)).describe()).runId;
  const owners = await whileLagging('node history, unlisted runs', async () => {
    const owners: string[] = [];
    const allocate = async () => {
      const owner = `lease/history-${owners.length}/eth0`;
      await ops.allocate({ owner, podUid: owner, pool, run: 'run-1' });
      owners.push(owner);
    };
    await allocate();
    const first = await runOf();
    // Until the node continues as new: its history then spans two runs, neither listed.
    for (let i = 0; i < 200 && (await runOf()) === first; i++) await allocate();
    expect(await runOf()).not.toBe(first);
    await allocate(); // one in the new run too
    const listed = client.workflow.list({ query: `WorkflowId = '${nodeWorkflowId(node)}'` });
    let runs = 0;
    for await (const run of listed) runs += run.runId ? 1 : 0;
    expect(runs).toBe(0);
    const events = await nodeAddressEvents(client, node);
    const allocated = new Set(events.filter((e) => e.kind === 'allocate').map((e) => e.owner));
    expect(owners.filter((owner) => !allocated.has(owner))).toEqual([]);
    expect(new Set(events.map((e) => e.runId)).size).toBeGreaterThanOrEqual(2);
    return owners;
  });
  const events = await nodeAddressEvents(client, node);
  expect(events.filter((e) => e.kind === 'allocate')).toHaveLength(owners.length * 2); // v4 and v6
}, 240_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 12);
});
