// Static addresses (issue 29 item 2) and who had an address when (item 6) on the real cluster,
// driven through the Kubernetes API only. A pod annotated `netlease.io/ip-addresses` gets that
// address: read back from its sandbox's eth0 on its node (the kernel), its podIPs and its lease. A
// second pod asking for it on the other node does not start while the first holds it: the
// kubelet's FailedCreatePodSandBox event carries the refusal, `static-address-held`, naming the
// holder, and once the first pod is deleted the kubelet's next try gives the second the address. A
// pod asking for an address outside its pool never starts (`invalid-static-address`, a request
// error: no lease). Then `netleasectl ip --history` lists both holders with from and to, and
// `--at` a moment of the first's names it.
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { ipJson } from '../../kernel/ip';
import { globalAddresses, LinkSchema } from '../../kernel/links';
import { runToEnd } from '../../tools/processes';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { sandboxNetns } from '../harness/real-node';
import { leaseOfPod, useRealCluster } from '../harness/real-cluster';
import { expectReplayed } from '../harness/replay';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const nodeNames: [string, string] = [uniqueName('static-a'), uniqueName('static-b')];
const namespace = uniqueName('static');
const CLI = join(__dirname, '..', '..', 'cli', 'netleasectl.js');

const real = useRealCluster(
  { prefix: 'static', nodeNames, preProduce: true },
  { startMs: 400_000, stopMs: 240_000 },
);

beforeAll(async () => {
  await real.core.createNamespace({ body: { metadata: { name: namespace } } });
}, 60_000);

/** In the last /24 of the pool's /22: no node's block reaches it in this file. */
const staticAddress = (): string => {
  const [a, b, c] = (real.pool.cidrs[0] ?? '').split('/')[0]?.split('.') ?? [];
  return `${a}.${b}.${Number(c) + 3}.200`;
};

/** A busybox pod that sleeps, bound to `node` (no scheduler), asking for `address`. */
async function createPod(name: string, node: string, address: string): Promise<string> {
  const body: V1Pod = {
    metadata: { name, annotations: { 'netlease.io/ip-addresses': address } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
      ],
    },
  };
  return (await real.core.createNamespacedPod({ namespace, body })).metadata?.uid ?? '';
}

const readPod = (name: string) => real.core.readNamespacedPod({ namespace, name });

/** The messages of the pod's FailedCreatePodSandBox events, as the kubelet wrote them. */
async function sandboxFailures(uid: string): Promise<string[]> {
  const fieldSelector = `involvedObject.uid=${uid},reason=FailedCreatePodSandBox`;
  const events = await real.core.listNamespacedEvent({ namespace, fieldSelector });
  return events.items.map((e) => e.message ?? '');
}

/** The pod Running with `address` in its podIPs, its lease Running with it, and on its sandbox's eth0. */
async function runsWith(name: string, uid: string, node: string, address: string): Promise<void> {
  const pod = await waitForValue(
    () => readPod(name),
    (p) => p.status?.phase === 'Running',
    240_000,
    1000,
    `pod ${name} Running`,
  );
  expect((pod.status?.podIPs ?? []).map((p) => p.ip)).toContain(address);
  const lease = await waitForValue(
    () => leaseOfPod(real.temporal, uid),
    (s) => s?.phase === 'Running',
    60_000,
  );
  expect(lease?.addresses.map((a) => a.address)).toContain(address);
  const found = real.nodes.find((n) => n.real.nodeName === node);
  if (!found) throw new Error(`no real node ${node}`);
  const { netns } = await sandboxNetns(found.real.containerd.ctr, uid);
  const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  expect((eth0 ? globalAddresses(eth0) : []).map((a) => a.split('/')[0])).toContain(address);
}

const pods: Record<string, string> = {};

test('a pod gets the address it asks for; a second asking for it waits, its event naming the holder, and gets it once the first is gone', async () => {
  const address = staticAddress();
  pods.first = await createPod('first', nodeNames[0], address);
  await runsWith('first', pods.first, nodeNames[0], address);
  pods.second = await createPod('second', nodeNames[1], address);
  const held = await waitForValue(
    () => sandboxFailures(pods.second ?? ''),
    (ms) => ms.some((m) => m.includes('static-address-held:')),
    180_000,
    1000,
    'a FailedCreatePodSandBox event of second with static-address-held',
  );
  expect(held.find((m) => m.includes('static-address-held:'))).toContain(`lease/${pods.first}/eth0`);
  expect((await readPod('second')).status?.phase).toBe('Pending');
  await real.core.deleteNamespacedPod({ namespace, name: 'first' });
  await runsWith('second', pods.second, nodeNames[1], address);
}, 600_000);

test('a pod asking for an address outside its pool never starts: invalid-static-address, and no lease', async () => {
  const uid = await createPod('outside', nodeNames[0], '203.0.113.7');
  const failures = await waitForValue(
    () => sandboxFailures(uid),
    (ms) => ms.some((m) => m.includes('invalid-static-address:')),
    180_000,
    1000,
    'a FailedCreatePodSandBox event of outside with invalid-static-address',
  );
  expect(failures.find((m) => m.includes('invalid-static-address:'))).toContain('203.0.113.7');
  expect(await leaseOfPod(real.temporal, uid)).toBeUndefined();
}, 300_000);

interface Holder {
  owner: string;
  pod: string;
  podUid: string;
  node: string;
  allocated: string;
  released: string;
}

test('netleasectl ip --history lists both holders with from and to; --at a moment of the first names it', async () => {
  const flags = ['--address', temporalAddress(), '--task-queue', real.temporal.taskQueue];
  const ctl = async <T>(...args: string[]): Promise<T> => {
    const run = await runToEnd('node', [CLI, ...args, ...flags, '-o', 'json']);
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    return JSON.parse(run.stdout) as T;
  };
  const { history } = await ctl<{ history: Holder[] }>('ip', staticAddress(), '--history');
  expect(history.map((h) => [h.pod, h.podUid, h.node])).toEqual([
    [`${namespace}/first`, pods.first, nodeNames[0]],
    [`${namespace}/second`, pods.second, nodeNames[1]],
  ]);
  const [first, second] = history as [Holder, Holder];
  expect(Date.parse(first.released)).toBeLessThanOrEqual(Date.parse(second.allocated));
  expect(second.released).toBe('');
  const moment = new Date((Date.parse(first.allocated) + Date.parse(first.released)) / 2).toISOString();
  const at = await ctl<{ holders: Holder[] }>('ip', staticAddress(), '--at', moment);
  expect(at.holders.map((h) => h.podUid)).toEqual([pods.first]);
}, 120_000);

test('clean-up: the namespace deleted, the leases released', async () => {
  await real.core.deleteNamespace({ name: namespace });
  for (const name of ['first', 'second'])
    await waitForValue(
      () => leaseOfPod(real.temporal, pods[name] ?? ''),
      (s) => s?.phase === 'Released',
      180_000,
      1000,
      `the lease of ${name} Released`,
    );
}, 300_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 2);
});
