// End to end, as an operator would: a Deployment made and scaled through the Kubernetes API only;
// the real controller-manager, scheduler, kubelet and containerd do the rest, and containerd calls
// netlease through the conflist install-cni wrote (ptp mode: each pod a veth pair to the agent's
// host namespace, with host routes there, so pods on the one node reach each other). The test
// then reads what netlease and the kernel hold: the leases, the node's allocation table, eth0 in
// each pod's namespace, and a ping between two pods. Scaling to 0 must leave none of it.
import { expectReplayed } from '../harness/replay';
import { existsSync } from 'node:fs';
import type { AppsV1Api, setHeaderOptions, V1Pod } from '@kubernetes/client-node' with {
  'resolution-mode': 'import',
};
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { ipJson, runIn } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import { type CoreApi } from '../../kubernetes/kube';
import { netnsOf } from '../../tools/containerd';
import { nodeStateQuery } from '../../workflows/node-messages';
import { containersOfPod } from '../harness/real-node';
import { uniqueName, type TestTemporal } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import {
  leaseOfPod,
  sleepersDeployment,
  startRealCluster,
  onlyNode,
  type RealCluster,
  type RealClusterNode,
} from '../harness/real-cluster';

const REPLICAS = 20;
const nodeName = uniqueName('e2e-node');
const namespace = 'default';
const app = uniqueName('sleepers');
let temporal: TestTemporal;
let core: CoreApi;
let apps: AppsV1Api;
let mergePatch: ReturnType<typeof setHeaderOptions>;

let real: RealCluster;
let node: RealClusterNode;
beforeAll(async () => {
  // NETLEASE_E2E_PRE_PRODUCE=0: the agent pre-produces nothing (every ADD takes the cold path).
  real = await startRealCluster({
    prefix: 'e2e',
    nodeNames: [nodeName],
    preProduce: process.env.NETLEASE_E2E_PRE_PRODUCE !== '0',
  });
  ({ temporal, core, apps } = real);
  node = onlyNode(real);
  // client-node 1.x would send a JSON patch; spec.replicas is a merge patch, as kubectl scale.
  mergePatch = real.kube.kube.setHeaderOptions('Content-Type', real.kube.kube.PatchStrategy.MergePatch);
}, 300_000);
afterAll(() => real?.stop(), 180_000);

const leaseOf = (uid: string) => leaseOfPod(temporal, uid);

const nodeTable = async () =>
  (await temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery)).tables[
    temporal.taskQueue
  ];

const podsOfApp = async (): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;

const allRunning = (pods: V1Pod[]) =>
  pods.length === REPLICAS &&
  pods.every((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);

const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

const scaleTo = (replicas: number) =>
  apps.patchNamespacedDeployment({ name: app, namespace, body: { spec: { replicas } } }, mergePatch);

/** The sandbox's network namespace of each pod, reading containerd's containers once per pod. */
async function netnsOfPods(uids: string[]): Promise<Map<string, string>> {
  const ctr = node.real.containerd.ctr;
  if (!ctr) throw new Error('no cluster');
  const found = new Map<string, string>();
  for (const uid of uids) {
    const sandboxes = (await containersOfPod(ctr, uid)).filter((c) => c.kind === 'sandbox');
    if (sandboxes.length !== 1) throw new Error(`pod ${uid} has ${sandboxes.length} sandboxes, not 1`);
    const netns = await netnsOf(ctr, sandboxes[0]?.id ?? '');
    if (!netns) throw new Error(`pod ${uid}'s sandbox has no network namespace path`);
    found.set(uid, netns);
  }
  return found;
}

/** One echo from `from`'s namespace to `to`, retried to a deadline (a single echo may be lost). */
const ping = (from: string, to: string) =>
  waitForValue(
    () => runIn(from, 'ping', ['-c', '1', '-W', '2', to]).catch((err: unknown) => String(err)),
    (out) => /1 packets transmitted, 1 received/.test(out),
    20_000,
    500,
    `ping ${to} from ${from}`,
  );

test(`a Deployment of ${REPLICAS} pods runs with its leases' addresses; scaled to 0 it leaves none`, async () => {
  const started = Date.now();
  await apps.createNamespacedDeployment({
    namespace,
    body: sleepersDeployment(app, REPLICAS),
  });
  const pods = await waitForValue(podsOfApp, allRunning, 600_000, 1000, `${REPLICAS} pods of ${app} Running`);
  console.log(`e2e: ${REPLICAS} pods Running in ${Math.round((Date.now() - started) / 1000)} s`);
  expect(pods.map((p) => p.spec?.nodeName)).toEqual(pods.map(() => nodeName));

  // Each pod's podIPs are its lease's addresses, and no address is any other pod's.
  const uids = pods.map(uidOf);
  const leases = new Map<string, LeaseState | undefined>();
  for (const uid of uids)
    leases.set(
      uid,
      await waitForValue(
        () => leaseOf(uid),
        (s) => s?.phase === 'Running',
        60_000,
      ),
    );
  for (const pod of pods) {
    const addresses = addressesOf(leases.get(uidOf(pod)));
    expect(addresses).toHaveLength(2); // the test pool is dual-stack
    expect(sorted((pod.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));
  }
  const everyAddress = [...leases.values()].flatMap(addressesOf);
  expect(new Set(everyAddress).size).toBe(REPLICAS * 2);
  // The node's table holds each of them for its pod's lease (what scaling to 0 must empty).
  const holding = await nodeTable();
  const owners = everyAddress.map((address) => holding?.allocations[address]?.owner);
  expect(owners).toEqual(uids.flatMap((uid) => [0, 1].map(() => leaseWorkflowId(uid, 'eth0'))));

  // The kernel: eth0 in each pod's namespace carries exactly its lease's addresses.
  const netns = await netnsOfPods(uids);
  for (const uid of uids) {
    const [eth0] = await ipJson(netns.get(uid), ['addr', 'show', 'dev', 'eth0'], LinkSchema);
    const onLink = (eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local);
    expect({ uid, onLink: sorted(onLink) }).toEqual({ uid, onLink: sorted(addressesOf(leases.get(uid))) });
  }

  // Two pods on the node reach each other, IPv4 and IPv6, both ways.
  const [a = '', b = ''] = uids;
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    for (const target of addressesOf(leases.get(to))) await ping(netns.get(from) ?? '', target);
  }

  // Scale to 0: the kubelet's DEL and the pod deletions release every lease.
  await scaleTo(0);
  await waitForValue(podsOfApp, (left) => left.length === 0, 300_000, 1000, `pods of ${app} gone`);
  for (const uid of uids) {
    const released = await waitForValue(
      () => leaseOf(uid),
      (s) => s?.phase === 'Released',
      120_000,
    );
    expect(released?.attachments).toEqual([]);
  }
  const table = await waitForValue(
    nodeTable,
    (t) => Object.keys(t?.allocations ?? {}).length === 0,
    60_000,
    500,
    `no allocation left on ${nodeName}`,
  );
  expect(everyAddress.filter((address) => table?.allocations[address])).toEqual([]);
  for (const path of netns.values()) {
    await waitForValue(
      async () => existsSync(path),
      (exists) => !exists,
      60_000,
      500,
      `${path} removed`,
    );
  }
}, 1_200_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(temporal, 21); // twenty leases and the node's workflow at least
});
