// End to end, as an operator would: a Deployment made and scaled through the Kubernetes API only;
// the real controller-manager, scheduler, kubelet and containerd do the rest, and containerd calls
// netlease through the conflist install-cni wrote (ptp mode: each pod a veth pair to the agent's
// host namespace, with host routes there, so pods on the one node reach each other). The test
// then reads what netlease and the kernel hold: the leases, the node's allocation table, eth0 in
// each pod's namespace, and a ping between two pods. Scaling to 0 must leave none of it.
import { expectReplayed } from '../harness/replay';
import { existsSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { ipJson } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import { nodeStateQuery } from '../../workflows/node-messages';
import { ping } from '../harness/netns';
import { sandboxNetns } from '../harness/real-node';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { leaseOfPod, scaleDeployment, sleepersDeployment, useRealCluster } from '../harness/real-cluster';

const REPLICAS = 20;
const nodeName = uniqueName('e2e-node');
const namespace = 'default';
const app = uniqueName('sleepers');
// NETLEASE_E2E_PRE_PRODUCE=0: the agent pre-produces nothing (every ADD takes the cold path).
const real = useRealCluster({
  prefix: 'e2e',
  nodeNames: [nodeName],
  preProduce: process.env.NETLEASE_E2E_PRE_PRODUCE !== '0',
});

const leaseOf = (uid: string) => leaseOfPod(real.temporal, uid);

const nodeTable = async () =>
  (await real.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery)).tables[
    real.temporal.taskQueue
  ];

const podsOfApp = async (): Promise<V1Pod[]> =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;

const allRunning = (pods: V1Pod[]) =>
  pods.length === REPLICAS &&
  pods.every((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);

const sorted = (values: string[]) => [...values].sort();
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** The sandbox's network namespace of each pod. */
async function netnsOfPods(uids: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const uid of uids) found.set(uid, (await sandboxNetns(real.node.real.containerd.ctr, uid)).netns);
  return found;
}

test(`a Deployment of ${REPLICAS} pods runs with its leases' addresses; scaled to 0 it leaves none`, async () => {
  const started = Date.now();
  await real.apps.createNamespacedDeployment({
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
  await scaleDeployment(real, app, 0);
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
  await expectReplayed(real.temporal, 21); // twenty leases and the node's workflow at least
});
