// Seed 001 with the real StatefulSet controller: web-0 of a 3-replica StatefulSet is deleted while
// the reconciler runs every 2 s, and the controller recreates it under the same name (a new UID).
// In whereabouts the reconciler freed the new pod's address while it was Pending (no IP in its
// status yet) and the next pod got it too. Here the old lease ends Released, the new one is never
// released on its way to Running, and no address is ever listed by two pods or two open leases
// (sampled every ~200 ms throughout). Only the Kubernetes API drives the workload.
// Sticky addresses (issue 29 item 1) with the same controller: a StatefulSet whose pod template
// opts in keeps each ordinal's addresses when the controller recreates a pod and across a
// scale-down and up; the pool workflow shows the reservations, which end once the StatefulSet is
// deleted. (Whereabouts' StatefulSet scenario, 20 replicas scaled: e2e/statefulset-scaled.)
import { expectReplayed } from '../harness/replay';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { nodeWorkflowId, reconcileScheduleId } from '../../domain/ids';
import { ipJson } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import { knownLeases } from '../../temporal/visibility';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { nodeStateQuery } from '../../workflows/node-messages';
import { sampleAddresses, type AddressReaders, type AddressRound } from '../harness/address-samples';
import { sandboxNetns } from '../harness/real-node';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { leaseOfPod, useRealCluster } from '../harness/real-cluster';
import { podIps, stickyStatefulSets } from '../harness/sticky-statefulsets';

const RECONCILE_SECONDS = 2;
const namespace = 'default';
const app = 'web';
const nodeName = uniqueName('sts-node');
const real = useRealCluster({
  prefix: 'sts',
  nodeNames: [nodeName],
  reconcileIntervalSeconds: RECONCILE_SECONDS,
});

const leaseOf = (uid: string) => leaseOfPod(real.temporal, uid);
const sets = stickyStatefulSets(real, nodeName, namespace);

const sorted = (values: string[]) => [...values].sort();
const listPods = async () =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;
const named = (pods: V1Pod[], name: string) => pods.find((p) => p.metadata?.name === name);

const readers: AddressReaders = {
  pods: listPods,
  async openLeases() {
    const open = await knownLeases(real.temporal.client, real.temporal.taskQueue);
    const states = await Promise.all(open.map((l) => leaseOf(l.podUid)));
    return new Map(open.map((l, i) => [l.workflowId, states[i]]));
  },
  async nodeTables() {
    const handle = real.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName));
    return [{ node: nodeName, tables: (await handle.query(nodeStateQuery)).tables }];
  },
};

/** A 3-replica StatefulSet of sleeping busybox pods; its headless Service is not needed to run. */
const createStatefulSet = () =>
  real.apps.createNamespacedStatefulSet({
    namespace,
    body: {
      metadata: { name: app },
      spec: {
        replicas: 3,
        serviceName: app,
        selector: { matchLabels: { app } },
        template: {
          metadata: { labels: { app } },
          spec: {
            terminationGracePeriodSeconds: 2,
            containers: [
              { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
            ],
          },
        },
      },
    },
  });

const allRunning = (pods: V1Pod[]) =>
  pods.length === 3 && pods.every((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);

const reconcileRuns = async () =>
  (await real.temporal.client.schedule.getHandle(reconcileScheduleId(real.temporal.taskQueue)).describe())
    .info.numActionsTaken;

/** A pod not being deleted whose lease is Released: what the seed did to a Pending pod. */
async function releasedWhileLive(pods: V1Pod[]): Promise<string[]> {
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const phases = await Promise.all(live.map(async (p) => (await leaseOf(p.metadata?.uid ?? ''))?.phase));
  return live.flatMap((p, i) =>
    phases[i] === 'Released'
      ? [`${p.metadata?.name} (${p.metadata?.uid}, ${p.status?.phase}) has its lease Released`]
      : [],
  );
}

/** What the samples saw of the new web-0 (its phase and its lease's), and every live pod's lease. */
function watchNewWeb0(oldUid: string) {
  const seen: string[] = [];
  let newUid: string | undefined;
  const observe = async (round: AddressRound): Promise<string[]> => {
    const pod = named(round.pods, 'web-0');
    const uid = pod?.metadata?.uid;
    if (pod && uid && uid !== oldUid) {
      newUid = uid;
      const now = `${pod.status?.phase}/${(await leaseOf(uid))?.phase ?? 'none'}`;
      if (seen.at(-1) !== now) seen.push(now);
    }
    return releasedWhileLive(round.pods);
  };
  const done = (round: AddressRound) => {
    const pod = named(round.pods, 'web-0');
    const uid = pod?.metadata?.uid;
    return uid !== undefined && uid !== oldUid && pod?.status?.phase === 'Running';
  };
  return { observe, done, seen, uid: () => newUid };
}

test('web-0 recreated by the StatefulSet controller keeps its new lease while Pending; no address is shared', async () => {
  let started = Date.now();
  await createStatefulSet();
  const running = await waitForValue(listPods, allRunning, 300_000, 500, 'the 3 StatefulSet pods Running');
  process.stdout.write(`\nstatefulset: 3 pods Running in ${Date.now() - started} ms\n`);
  for (const pod of running) expect(pod.spec?.nodeName).toBe(nodeName);
  expect(new Set(running.flatMap((p) => podIps(p))).size).toBe(6); // dual-stack, all distinct
  const old = named(running, 'web-0');
  const oldUid = old?.metadata?.uid ?? '';
  expect((await leaseOf(oldUid))?.phase).toBe('Running');

  const runsBefore = await reconcileRuns();
  const web0 = watchNewWeb0(oldUid);
  started = Date.now();
  await real.core.deleteNamespacedPod({ name: 'web-0', namespace }); // graceful, the pod's own grace
  const sampled = await sampleAddresses(readers, web0.observe, web0.done, { timeoutMs: 180_000 });
  process.stdout.write(
    `statefulset: new web-0 Running ${Date.now() - started} ms after the delete; ${sampled.rounds} rounds; seen ${web0.seen.join(' → ')}\n`,
  );
  expect(sampled.timedOut).toBe(false);
  expect(sampled.problems).toEqual([]);
  expect(sampled.rounds).toBeGreaterThan(5);
  // The reconciler ran while web-0 was replaced (its schedule fires every RECONCILE_SECONDS).
  expect(await reconcileRuns()).toBeGreaterThan(runsBefore);
  // The samples saw the new pod before it ran, so "never released while Pending" was checked.
  expect(web0.seen.filter((s) => !s.startsWith('Running/')).length).toBeGreaterThan(0);

  const newUid = web0.uid() ?? '';
  expect(newUid).not.toBe(oldUid);
  const oldLease = await waitForValue(
    () => leaseOf(oldUid),
    (s) => s?.phase === 'Released',
    60_000,
  );
  expect(oldLease?.attachments).toEqual([]);
  const lease = await waitForValue(
    () => leaseOf(newUid),
    (s) => s?.phase === 'Running',
    60_000,
  );
  const addresses = sorted((lease?.addresses ?? []).map((a) => a.address));
  expect(addresses).toHaveLength(2);
  const pod = named(await listPods(), 'web-0');
  expect(pod?.metadata?.uid).toBe(newUid);
  expect(podIps(pod)).toEqual(addresses);

  const ctr = real.node.real.containerd.ctr;
  if (!ctr) throw new Error('no cluster');
  const { netns } = await sandboxNetns(ctr, newUid);
  const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  const onLink = (eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local);
  expect(sorted(onLink)).toEqual(addresses);
}, 600_000);

test('a sticky StatefulSet keeps each ordinal’s addresses when a pod is recreated and across scale-down and up', async () => {
  const name = 'db';
  await sets.create(name, 2);
  const first = await sets.runningIps(name, 2);
  const kept = new Map([...first].map(([pod, { ips }]) => [pod, ips]));
  expect(new Set([...kept.values()].flat()).size).toBe(4);
  const reservations = await sets.reservations();
  for (const [pod, ips] of kept)
    expect(
      sorted(reservations[`${namespace}/${name}/${pod.replace(`${name}-`, '')}`]?.addresses ?? []),
    ).toEqual(ips);

  // The controller recreates db-1 under its name (a new UID): the same addresses, once the old one let go.
  const oldUid = first.get('db-1')?.uid ?? '';
  await real.core.deleteNamespacedPod({ name: 'db-1', namespace });
  const recreated = await sets.runningIps(name, 2, [oldUid]);
  expect(recreated.get('db-1')?.uid).not.toBe(oldUid);
  expect(recreated.get('db-1')?.ips).toEqual(kept.get('db-1'));

  // Scaled to 1 and back to 2: db-1 comes back with its addresses; db-0 never moved.
  await sets.scale(name, 1);
  await sets.runningIps(name, 1);
  await sets.scale(name, 2);
  const back = await sets.runningIps(name, 2);
  expect(back.get('db-1')?.ips).toEqual(kept.get('db-1'));
  expect(back.get('db-0')?.ips).toEqual(kept.get('db-0'));
  await real.apps.deleteNamespacedStatefulSet({ name, namespace });
  await sets.reservationsEnd(name);
}, 600_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 5); // four leases (web-0 twice) and the node's workflow at least
});
